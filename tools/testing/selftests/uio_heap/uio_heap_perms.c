// SPDX-License-Identifier: GPL-2.0
/*
 * Heap nodes are root-only (0600) until the udev rule of Documentation/uio-heap.rst hands
 * them to a group; dma_mask_bits and max_bytes stay root's.  Children drop to "nobody"
 * (65534) and "heapuser" (1000, in "uioheap", 990), as the VM's /etc defines them.
 */
#include <grp.h>

#include "kselftest_harness.h"
#include "common.h"

struct ids {
	uid_t uid;
	gid_t gid;
	gid_t groups[4];
	int ngroups;
};

/* Field @field (0-based) of /etc/@file's line for @name, else @def. */
static long etc_lookup(const char *file, const char *name, int field, long def)
{
	char path[32], line[256], *p;
	long val = -1;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/etc/%s", file);
	f = fopen(path, "re");
	if (!f)
		return def;
	while (val < 0 && fgets(line, sizeof(line), f)) {
		p = line;
		if (strcmp(strsep(&p, ":"), name))
			continue;
		for (i = 1; i < field && p; i++)
			strsep(&p, ":");
		if (p)
			val = strtol(p, NULL, 10);
	}
	fclose(f);
	return val >= 0 ? val : def;
}

static gid_t uioheap_gid(void)
{
	return etc_lookup("group", "uioheap", 2, 990);
}

/* @user's ids, else @def; with uioheap as a supplementary group if @member. */
static struct ids user_ids(const char *user, long def, bool member)
{
	return (struct ids){
		.uid = etc_lookup("passwd", user, 2, def),
		.gid = etc_lookup("passwd", user, 3, def),
		.groups = { uioheap_gid() },
		.ngroups = member,
	};
}

/* What an unprivileged child could do: 0 or the errno of each step, -1 untried. */
struct as_result {
	int dropped;		/* 1: ids as asked, and no way back to root */
	int open_rw;
	int open_ro;
	int alloc;
	int addr;
	int import;		/* of its own buffer, into the same heap */
	int map;
	int touch;		/* 0, or the signal */
	int sync;
	int write_mask;
	int write_max;
	int read_bytes;
	int chmod_node;
	int done;
};

/* Everything a user of the heap would try, recorded in @r. */
static void try_all(const char *node, const char *uio, int heap_fd, struct as_result *r)
{
	unsigned long long v;
	unsigned char *p;
	uint64_t addr;
	int heap, fd, ret;

	heap = open(node, O_RDWR | O_CLOEXEC);
	r->open_rw = heap < 0 ? errno : 0;
	fd = open(node, O_RDONLY | O_CLOEXEC);
	r->open_ro = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (heap < 0)
		heap = heap_fd;		/* one handed down, if any */
	if (heap >= 0) {
		fd = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		r->alloc = fd < 0 ? -fd : 0;
		if (fd >= 0) {
			r->addr = -uioheap_dma_addr(heap, fd, &addr, NULL);
			ret = uioheap_import(heap, fd, &addr, NULL);
			r->import = ret > 0 ? 0 : -ret;
			if (ret > 0)
				uioheap_unimport(heap, ret);
			p = uioheap_map(fd, SZ_64K);
			r->map = p ? 0 : errno;
			if (p) {
				r->touch = probe_pages(p, SZ_64K, true, 0x42);
				if (!r->touch && p[SZ_64K - PAGE_SZ] != 0x42)
					r->touch = -1;
				munmap(p, SZ_64K);
			}
			r->sync = -uioheap_sync(fd, 1, 1);
			if (!r->sync)
				uioheap_sync(fd, 0, 1);
			close(fd);
		}
		if (heap != heap_fd)
			close(heap);
	}
	r->write_mask = -uioheap_sysfs_write(uio, "dma_mask_bits", 40);
	r->write_max = -uioheap_sysfs_write(uio, "max_bytes", 4096);
	r->read_bytes = -uioheap_sysfs_read(uio, "allocated_bytes", &v);
	r->chmod_node = chmod(node, 0666) ? errno : 0;
	r->done = 1;
}

/* Runs try_all() in a child with @ids, for good (no way back to root), into @r. */
static void run_as(struct __test_metadata *_metadata, const struct ids *ids,
		   const char *node, const char *uio, int heap_fd, struct as_result *r)
{
	pid_t pid;

	memset(r, 0xff, sizeof(*r));	/* every int -1 */
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgroups(ids->ngroups, ids->groups) || setgid(ids->gid) || setuid(ids->uid))
			_exit(3);
		r->dropped = getuid() == ids->uid && geteuid() == ids->uid &&
			     getgid() == ids->gid && getegid() == ids->gid &&
			     getgroups(0, NULL) == ids->ngroups &&
			     setuid(0) == -1 && errno == EPERM;
		try_all(node, uio, heap_fd, r);
		_exit(0);
	}
	ASSERT_EQ(0, wait_exit(pid)) TH_LOG("child failed to drop privileges");
	ASSERT_EQ(1, r->done);
	ASSERT_EQ(1, r->dropped);
}

FIXTURE(perms) {
	EDU_HEAPS_FIELDS;
	struct stat orig[2];
	struct as_result *r;
};

FIXTURE_SETUP(perms)
{
	int i;

	EDU_HEAPS_SETUP(self);
	for (i = 0; i < self->n; i++)
		ASSERT_EQ(0, stat(self->node[i], &self->orig[i]));
	self->r = mmap(NULL, sizeof(*self->r), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->r);
}

#define UNSAFE_PARAM UIO_HEAP_PARAMS "unsafe_noiommu_addresses"

FIXTURE_TEARDOWN(perms)
{
	int i;

	write_str(UNSAFE_PARAM, "0");
	/* Root-only again, as the module creates the nodes. */
	for (i = 0; i < self->n; i++) {
		chown(self->node[i], 0, 0);
		chmod(self->node[i], 0600);
	}
}

/* Without an IOMMU (UIOHEAP_IOMMU) an address is physical: for CAP_SYS_RAWIO only. */
static int unprivileged_addr_errno(void)
{
	const char *mode = getenv("UIOHEAP_IOMMU");

	return mode && !strcmp(mode, "on") ? 0 : EPERM;
}

static void expect_no_sysfs_writes(struct __test_metadata *_metadata,
				   const struct as_result *r, const char *who)
{
	EXPECT_EQ(EACCES, r->write_mask) TH_LOG("%s: dma_mask_bits", who);
	EXPECT_EQ(EACCES, r->write_max) TH_LOG("%s: max_bytes", who);
	/* The figures are for everyone to read. */
	EXPECT_EQ(0, r->read_bytes) TH_LOG("%s: allocated_bytes", who);
	EXPECT_EQ(EPERM, r->chmod_node) TH_LOG("%s: chmod of the node", who);
}

static void expect_locked_out(struct __test_metadata *_metadata,
			      const struct as_result *r, const char *who)
{
	EXPECT_EQ(EACCES, r->open_rw) TH_LOG("%s opened the node", who);
	EXPECT_EQ(EACCES, r->open_ro) TH_LOG("%s opened the node", who);
	EXPECT_EQ(-1, r->alloc);
	expect_no_sysfs_writes(_metadata, r, who);
}

TEST_F(perms, nodes_are_root_only)
{
	struct ids nob = user_ids("nobody", 65534, false);
	struct ids member = user_ids("heapuser", 1000, true);
	char path[128];
	struct stat st;
	int i;

	for (i = 0; i < self->n; i++) {
		EXPECT_TRUE(S_ISCHR(self->orig[i].st_mode));
		EXPECT_EQ(0600, self->orig[i].st_mode & 07777);
		EXPECT_EQ(0, self->orig[i].st_uid);
		EXPECT_EQ(0, self->orig[i].st_gid);

		/* Writable attributes are root's, the figures everyone's. */
		snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/max_bytes", self->uio[i]);
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_EQ(0644, st.st_mode & 07777);
		EXPECT_EQ(0, st.st_uid);
		snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/dma_mask_bits", self->uio[i]);
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_EQ(0644, st.st_mode & 07777);

		run_as(_metadata, &nob, self->node[i], self->uio[i], -1, self->r);
		expect_locked_out(_metadata, self->r, "nobody");

		/* Group membership means nothing until the group is granted. */
		run_as(_metadata, &member, self->node[i], self->uio[i], -1, self->r);
		expect_locked_out(_metadata, self->r, "heapuser");

		ASSERT_EQ(0, stat(self->node[i], &st));
		EXPECT_EQ(0600, st.st_mode & 07777);
	}
}

TEST_F(perms, udev_rule_grants_the_group)
{
	struct ids nob = user_ids("nobody", 65534, false);
	struct ids member = user_ids("heapuser", 1000, true), primary = member;
	unsigned long long mask[2], max[2];
	struct stat st;
	int i;

	/* A member by primary group only counts as well. */
	primary.gid = uioheap_gid();
	primary.ngroups = 0;

	for (i = 0; i < self->n; i++) {
		ASSERT_EQ(0, uioheap_sysfs_read(self->uio[i], "dma_mask_bits", &mask[i]));
		ASSERT_EQ(0, uioheap_sysfs_read(self->uio[i], "max_bytes", &max[i]));

		/* What GROUP="uioheap", MODE="0660" does. */
		ASSERT_EQ(0, chown(self->node[i], 0, uioheap_gid()));
		ASSERT_EQ(0, chmod(self->node[i], 0660));
		ASSERT_EQ(0, stat(self->node[i], &st));
		EXPECT_EQ(uioheap_gid(), st.st_gid);

		run_as(_metadata, &member, self->node[i], self->uio[i], -1, self->r);
		EXPECT_EQ(0, self->r->open_rw);
		EXPECT_EQ(0, self->r->open_ro);
		EXPECT_EQ(0, self->r->alloc) TH_LOG("alloc: %s", strerror(self->r->alloc));
		EXPECT_EQ(unprivileged_addr_errno(), self->r->addr)
			TH_LOG("address: %s", strerror(self->r->addr));
		EXPECT_EQ(unprivileged_addr_errno(), self->r->import)
			TH_LOG("import: %s", strerror(self->r->import));
		EXPECT_EQ(0, self->r->map);
		EXPECT_EQ(0, self->r->touch);
		EXPECT_EQ(0, self->r->sync);
		/* Still no say over the mask or the limit. */
		expect_no_sysfs_writes(_metadata, self->r, "heapuser");

		run_as(_metadata, &primary, self->node[i], self->uio[i], -1, self->r);
		EXPECT_EQ(0, self->r->open_rw);
		EXPECT_EQ(0, self->r->alloc);
		expect_no_sysfs_writes(_metadata, self->r, "primary group");

		run_as(_metadata, &nob, self->node[i], self->uio[i], -1, self->r);
		expect_locked_out(_metadata, self->r, "nobody");

		EXPECT_EQ(mask[i], heap_ull(self->uio[i], "dma_mask_bits"));
		EXPECT_EQ(max[i], heap_ull(self->uio[i], "max_bytes"));

		ASSERT_EQ(0, chown(self->node[i], 0, 0));
		ASSERT_EQ(0, chmod(self->node[i], 0600));
	}
}

/* Access is decided at open(): an fd root opened and handed down keeps working. */
TEST_F(perms, fds_handed_down_keep_working)
{
	struct ids nob = user_ids("nobody", 65534, false);
	int heap;

	heap = open(self->node[0], O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	run_as(_metadata, &nob, self->node[0], self->uio[0], heap, self->r);
	EXPECT_EQ(EACCES, self->r->open_rw);
	EXPECT_EQ(0, self->r->alloc);
	/* The address is the one thing the caller's own privilege decides. */
	EXPECT_EQ(unprivileged_addr_errno(), self->r->addr);
	EXPECT_EQ(0, self->r->map);
	EXPECT_EQ(0, self->r->touch);
	expect_no_sysfs_writes(_metadata, self->r, "nobody with an fd");
	close(heap);
}

#define TAINT_USER_BIT 6

/*
 * The heap tells its IOMMU mode; without one, unsafe_noiommu_addresses=1 hands physical
 * addresses to the group for a taint (U), which /run/uioheap-taint-user announces.
 */
TEST_F(perms, physical_addresses_need_cap_sys_rawio)
{
	struct ids member = user_ids("heapuser", 1000, true);
	const char *mode = getenv("UIOHEAP_IOMMU");
	char want[16];
	int i, fd;

	ASSERT_NE(NULL, mode) TH_LOG("UIOHEAP_IOMMU is not set");
	for (i = 0; i < self->n; i++) {
		ASSERT_LT(0, heap_attr(self->uio[i], "iommu", want, sizeof(want)));
		if (!strcmp(mode, "on")) {
			EXPECT_TRUE(!strcmp(want, "dma") || !strcmp(want, "dma-fq"))
				TH_LOG("%s: iommu \"%s\"", self->uio[i], want);
		} else {
			EXPECT_STREQ("none", want);
		}
	}

	/* The wide edu's node: the narrow one's mask may refuse the import's pages (ERANGE). */
	ASSERT_EQ(0, chown(self->node[1], 0, uioheap_gid()));
	ASSERT_EQ(0, chmod(self->node[1], 0660));
	ASSERT_EQ(0, write_str(UNSAFE_PARAM, "1"));
	if (strcmp(mode, "on")) {
		fd = open("/run/uioheap-taint-user", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		ASSERT_LE(0, fd);
		close(fd);
	}
	run_as(_metadata, &member, self->node[1], self->uio[1], -1, self->r);
	EXPECT_EQ(0, self->r->addr) TH_LOG("address: %s", strerror(self->r->addr));
	EXPECT_EQ(0, self->r->import) TH_LOG("import: %s", strerror(self->r->import));
	/* Only a physical address handed out taints. */
	EXPECT_EQ(strcmp(mode, "on") != 0,
		  !!(read_ull("/proc/sys/kernel/tainted", 0) & (1ULL << TAINT_USER_BIT)));

	ASSERT_EQ(0, write_str(UNSAFE_PARAM, "0"));
	run_as(_metadata, &member, self->node[1], self->uio[1], -1, self->r);
	EXPECT_EQ(unprivileged_addr_errno(), self->r->addr);
	EXPECT_EQ(unprivileged_addr_errno(), self->r->import);
}

TEST_HARNESS_MAIN
