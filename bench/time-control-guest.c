#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/reboot.h>
static volatile char buf[4<<20];
int main(){
  struct timespec a,b;
  for (int rep=0; rep<5; rep++) {
    clock_gettime(CLOCK_MONOTONIC,&a);
    unsigned long s=0;
    for (int r=0;r<50;r++) for (long k=0;k<(4<<20);k+=64) s+=buf[k];
    clock_gettime(CLOCK_MONOTONIC,&b);
    printf("rep %d: %ld ns (sum %lu)\n", rep, (b.tv_sec-a.tv_sec)*1000000000L+(b.tv_nsec-a.tv_nsec), s);
  }
  fflush(stdout); reboot(RB_POWER_OFF); return 0;
}
