
/* ---------------------------------------------------------------------------------
 * The driver: the cases, the clients, the times, the cleanup.
 */

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Confinement, as sigbench's executor has it: every client thread's root is the
 * directory given (unshare(CLONE_FS), then chroot), so no path a step resolves — `..`,
 * an absolute symlink target, a link renamed to another depth — reaches outside it; the
 * kernel keeps it, not a check. The timed calls are unchanged. Root may chroot; anyone
 * else first becomes root of a user namespace of their own, their uid and gid mapped to
 * themselves (files are owned as without it). Where neither works, nothing runs. */
static char root[PATH_MAX];

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok;
}

static int may_confine(void)
{
	char map[64];
	unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();

	if (uid == 0)
		return 1;
	if (unshare(CLONE_NEWUSER) < 0) {
		fprintf(stderr, "repro: cannot confine the signature's paths to %s: not root, and no user namespace (unshare: %s); run it as root\n",
			root, strerror(errno));
		return 0;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
	if (!write_text("/proc/self/setgroups", "deny\n") ||
	    !write_text("/proc/self/uid_map", map)) {
		fprintf(stderr, "repro: cannot map uid %u in a user namespace (%s); run it as root\n",
			uid, strerror(errno));
		return 0;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
	if (!write_text("/proc/self/gid_map", map)) {
		fprintf(stderr, "repro: cannot map gid %u in a user namespace (%s); run it as root\n",
			gid, strerror(errno));
		return 0;
	}
	return 1;
}

/* A client's thread: a root, a working directory and a descriptor table of its own (as
 * sigbench's clients have), its setup, then every segment (round x phase) between the
 * gates the main thread times. It passes every gate even after a failure, so no one
 * waits for it. */
static void *client_main(void *arg)
{
	struct client *c = arg;
	char own[32];
	int s, k;

	for (k = 0; k < SLOTS; k++)
		c->fd[k] = -1;
	if (unshare(CLONE_FS | CLONE_FILES) < 0)
		fail("client %d: unshare(CLONE_FS|CLONE_FILES): %s", c->id, strerror(errno));
	else if (chroot(root) < 0)
		fail("client %d: cannot confine it to %s (chroot: %s); run it as root",
		     c->id, root, strerror(errno));
	else if (chdir(c->dir) < 0)
		fail("client %d: cannot enter %s%s: %s", c->id, root, c->dir, strerror(errno));
	else if (CLIENT_DIRS) {
		snprintf(own, sizeof(own), "client%d", c->id);
		if (mkdir(own, 0777) < 0 || chdir(own) < 0)
			fail("client %d: cannot make its directory %s%s/%s: %s", c->id, root,
			     c->dir, own, strerror(errno));
	}
	if (!stopping())
		setup(c);
	pthread_barrier_wait(c->gate); /* every client ready */
	if (TIME_NS) {
		/* A run for a time: passes over the work, no gates between phases, until the
		 * main thread says the time is up. */
		pthread_barrier_wait(c->gate); /* go */
		while (!halted()) {
			for (s = 0; s < ROUNDS * PHASES && !halted(); s++) {
				uint64_t round = (uint64_t)(s / PHASES);

				phase[s % PHASES](c, round * c->n + 1, (round + 1) * c->n);
			}
			if (!halted())
				__atomic_store_n(&c->passes, c->passes + 1, __ATOMIC_RELAXED);
		}
		pthread_barrier_wait(c->gate); /* every client done */
	} else
	for (s = 0; s < ROUNDS * PHASES; s++) {
		uint64_t round = (uint64_t)(s / PHASES);

		pthread_barrier_wait(c->gate); /* go */
		clock_gettime(CLOCK_MONOTONIC, &c->start);
		if (!stopping())
			phase[s % PHASES](c, round * c->n + 1, (round + 1) * c->n);
		clock_gettime(CLOCK_MONOTONIC, &c->end);
		pthread_barrier_wait(c->gate); /* every client done */
	}
	for (k = 0; k < SLOTS; k++)
		if (c->fd[k] >= 0)
			close(c->fd[k]);
	return NULL;
}

/* Everything below the root (never the root itself), links removed, not followed. */
static int remove_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	if (ftw->level == 0)
		return 0;
	if (type == FTW_DP || type == FTW_DNR)
		return rmdir(p) < 0 ? -1 : 0;
	return unlink(p) < 0 ? -1 : 0;
}

/* Remove what a case made (untimed) — its directory and whatever its steps made beside
 * it: the root was empty when the program started —, then sync. */
static void remove_tree(void)
{
	if (nftw(root, remove_entry, 64, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "repro: cannot empty %s: %s (remove what it holds by hand)\n", root,
			strerror(errno));
	sync();
}

static double elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec t = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };

	while (nanosleep(&t, &t) < 0 && errno == EINTR && !stopping())
		;
}

static uint64_t ops_of(struct client *c)
{
	uint64_t ops = 0;
	int k;

	for (k = 0; k < CLIENTS; k++)
		ops += __atomic_load_n(&c[k].ops, __ATOMIC_RELAXED);
	return ops;
}

/* A run for a time, the clients released: after the warm-up, the calls done over the
 * window, as calls per second. */
static double timed_window(struct client *c)
{
	struct timespec a, b;
	uint64_t before, after;

	sleep_ns(WARMUP_NS);
	before = ops_of(c);
	clock_gettime(CLOCK_MONOTONIC, &a);
	sleep_ns(TIME_NS);
	after = ops_of(c);
	clock_gettime(CLOCK_MONOTONIC, &b);
	__atomic_store_n(&time_up, 1, __ATOMIC_RELAXED);
	return (double)(after - before) / (elapsed_ns(&a, &b) / 1e9);
}

/* One case: the directory made with its properties, CLIENTS threads prepared, each
 * segment timed from the first client's start to the last one's end (each client reads
 * the clock itself: this thread may wake long after the gate opened); or, for a run for
 * a time, the calls per second over the window after the warm-up.
 * Returns 1 with the window's time in ms (calls per second), or 0 after a failure. */
static int run_case(const struct dir *d, uint64_t n, double *ms)
{
	char path[PATH_LEN], inside[PATH_LEN];
	struct client *c;
	pthread_t thread[CLIENTS];
	pthread_barrier_t gate;
	struct timespec first, last;
	double ns = 0;
	int k, s, err;

	snprintf(path, sizeof(path), "%s/%s", root, d->name);
	snprintf(inside, sizeof(inside), "/%s", d->name);
	if (mkdir(path, 0777) < 0)
		return fail("cannot create %s: %s", path, strerror(errno));
	c = calloc(CLIENTS, sizeof(*c));
	if (!c) {
		remove_tree();
		return fail("out of memory for %d clients", CLIENTS);
	}
	if (!d->props(path)) {
		free(c);
		remove_tree();
		return 0;
	}
	pthread_barrier_init(&gate, NULL, CLIENTS + 1);
	for (k = 0; k < CLIENTS; k++) {
		c[k].id = k;
		c[k].n = n;
		c[k].dir = inside;
		c[k].gate = &gate;
		err = pthread_create(&thread[k], NULL, client_main, &c[k]);
		if (err) {
			/* The clients started wait at a gate that can no longer fill, or still run
			 * their setup: nothing is removed under them (a client may be renaming what
			 * a removal would walk). */
			fprintf(stderr, "repro: cannot start client %d: %s; remove what %s holds by hand\n",
				k, strerror(err), root);
			exit(1);
		}
	}
	pthread_barrier_wait(&gate); /* ready */
	__atomic_store_n(&time_up, 0, __ATOMIC_RELAXED);
	if (TIME_NS) {
		pthread_barrier_wait(&gate); /* go */
		ns = timed_window(c) * 1e6; /* calls per second, as *ms below */
		pthread_barrier_wait(&gate); /* done */
	} else
	for (s = 0; s < ROUNDS * PHASES; s++) {
		pthread_barrier_wait(&gate); /* go */
		pthread_barrier_wait(&gate); /* done */
		first = c[0].start;
		last = c[0].end;
		for (k = 1; k < CLIENTS; k++) {
			if (elapsed_ns(&c[k].start, &first) > 0)
				first = c[k].start;
			if (elapsed_ns(&last, &c[k].end) > 0)
				last = c[k].end;
		}
		ns += elapsed_ns(&first, &last);
	}
	for (k = 0; k < CLIENTS; k++)
		pthread_join(thread[k], NULL);
	pthread_barrier_destroy(&gate);
	free(c);
	remove_tree();
	*ms = ns / 1e6;
	return !stopping();
}

/* The directory must exist, be empty and not be `/`: everything this program makes goes
 * in it and is removed again. Its real path is the clients' root. */
static int check_target(const char *target)
{
	DIR *dir;
	struct dirent *e;

	if (!realpath(target, root) || !(dir = opendir(root))) {
		fprintf(stderr, "repro: %s: %s (give an empty directory on the filesystem under test)\n",
			target, strerror(errno));
		return 0;
	}
	if (!strcmp(root, "/")) {
		fprintf(stderr, "repro: %s is the root directory: give an empty directory on the filesystem under test\n",
			target);
		closedir(dir);
		return 0;
	}
	while ((e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			fprintf(stderr, "repro: %s is not empty (it holds %s): give an empty directory on the filesystem under test\n",
				target, e->d_name);
			closedir(dir);
			return 0;
		}
	closedir(dir);
	return 1;
}

/* sigbench's milliseconds: whole ones from 10 up, one decimal below. */
static void format_ms(char *out, size_t len, double ms)
{
	snprintf(out, len, ms >= 10 ? "%.0f" : "%.1f", ms);
}

static void print_line(const char *prefix, const char *target, const struct dir *d, uint64_t n,
		       double ms, int nw, int pw)
{
	char path[PATH_LEN + 1], t[32];

	snprintf(path, sizeof(path), "%s/%s:", target, d->name);
	if (TIME_NS) {
		printf("%s...%s %*" PRIu64 " %s on %-*s %.0f calls/s over %.1f s%s\n", prefix, VERB,
		       nw, n, UNIT, pw, path, ms, (double)TIME_NS / 1e9,
		       CLIENT_DIRS ? " (" CLIENTS_TEXT " clients)" : "");
		return;
	}
	format_ms(t, sizeof(t), ms);
	printf("%s...%s %*" PRIu64 " %s on %-*s Job took %5s ms%s\n", prefix, VERB, nw, n, UNIT, pw,
	       path, t, CLIENT_DIRS ? " (" CLIENTS_TEXT " clients)" : "");
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Every case's figure, and one case's over the repetitions (static: -r may be large). */
static double ms[REPETITIONS][N_NS][N_DIRS];
static double reps[REPETITIONS];

int main(int argc, char **argv)
{
	struct sigaction sa;
	const char *target;
	char width[32];
	int rep, k, nw = 1, pw = 0, status = 0;
	size_t d;

	if (argc == 2 && !strcmp(argv[1], "--signature")) {
		/* The signature file itself, byte for byte (its sha256 is in the header). */
		fwrite(SIGNATURE_TEXT, 1, sizeof(SIGNATURE_TEXT) - 1, stdout);
		return ferror(stdout) ? 1 : 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: %s MOUNTED_DIR\n"
			"  MOUNTED_DIR: an empty directory on the filesystem under test\n"
			"       %s --signature (prints the signature file it was made from)\n",
			argv[0], argv[0]);
		return 2;
	}
	target = argv[1];
	if (!check_target(target) || !may_confine())
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
#if HAVE_DATA
	if (make_data() < 0) {
		fprintf(stderr, "repro: out of memory\n");
		return 1;
	}
#endif
	fprintf(stderr, "repro: each case creates one of");
	for (d = 0; d < N_DIRS; d++)
		fprintf(stderr, " %s/%s", target, dirs[d].name);
	fprintf(stderr, ", works in it and removes it\n");
	for (k = 0; k < N_NS; k++) {
		snprintf(width, sizeof(width), "%" PRIu64, NS[k]);
		if ((int)strlen(width) > nw)
			nw = (int)strlen(width);
	}
	for (d = 0; d < N_DIRS; d++)
		if ((int)(strlen(target) + strlen(dirs[d].name) + 2) > pw)
			pw = (int)(strlen(target) + strlen(dirs[d].name) + 2);
	for (rep = 0; rep < REPETITIONS && !status; rep++)
		for (k = 0; k < N_NS && !status; k++)
			for (d = 0; d < N_DIRS && !status; d++) {
				if (!run_case(&dirs[d], NS[k], &ms[rep][k][d])) {
					status = 1;
					break;
				}
				print_line("", target, &dirs[d], NS[k], ms[rep][k][d], nw, pw);
				fflush(stdout);
			}
	if (status) {
		if (interrupted)
			fprintf(stderr, "repro: interrupted; what it created is removed\n");
		else
			fprintf(stderr, "repro: %s\n", failure);
		return interrupted ? 130 : 1;
	}
	if (REPETITIONS > 1)
		for (k = 0; k < N_NS; k++)
			for (d = 0; d < N_DIRS; d++) {
				char prefix[48];

				for (rep = 0; rep < REPETITIONS; rep++)
					reps[rep] = ms[rep][k][d];
				snprintf(prefix, sizeof(prefix), "median of %d: ", REPETITIONS);
				print_line(prefix, target, &dirs[d], NS[k], median(reps, REPETITIONS), nw, pw);
			}
	return 0;
}
