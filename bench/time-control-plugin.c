/* bench/time-control.sh: a plugin that owns QEMU 10's virtual clock (plugin time control) and
 * advances it by 1 ns per executed instruction, like -icount shift=0. */
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
__attribute__((visibility("default"))) int qemu_plugin_version = 4;
const void *qemu_plugin_request_time_control(void);
void qemu_plugin_update_ns(const void *handle, int64_t time);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, void (*cb)(unsigned int, void *), int flags, void *udata);
static const void *handle;
static uint64_t insns, last;
static void exec_cb(unsigned int cpu, void *udata) {
    insns += (uintptr_t)udata;
    if (insns - last >= 1000) { last = insns; qemu_plugin_update_ns(handle, (int64_t)insns); }
}
static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    qemu_plugin_register_vcpu_tb_exec_cb(tb, exec_cb, 0, (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv) {
    handle = qemu_plugin_request_time_control();
    qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
    return 0;
}
