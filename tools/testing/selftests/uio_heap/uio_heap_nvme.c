// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap NVMe selftests: the example NVMe driver (tools/nvme/) drives a
 * real controller model through uio-heap buffers.
 *
 * The VM bench attaches QEMU's nvme device, binds it to uio_pci_generic
 * and names it in UIOHEAP_NVME (PCI address); its namespace is an image
 * the host filled from UIOHEAP_NVME_SEED (tools/nvme/pattern.h), so
 * reads are checked against data the driver did not produce.  A missing
 * controller is a failure, not a skip.
 *
 * Reads and writes, single-page, two-page and PRP-list transfers, a full
 * queue, data buffers from both heap nodes (uioN and uioN-cached, with
 * DMA_BUF_IOCTL_SYNC), the addresses the controller is given (IOVAs
 * behind an IOMMU, physical addresses without one: UIOHEAP_IOMMU says
 * which), decoded errors and timeouts, refused bad input, and revocation
 * on unbind.
 *
 * Every test prints "# summary: nvme_ios=N", the I/O commands it
 * completed.
 */
#include "kselftest_harness.h"
#include "common.h"
#include "nvme/nvme.h"
#include "nvme/pattern.h"

#define TIMEOUT		180	/* seconds per test, in TCG */

FIXTURE(nvme) {
	char pci[32];
	char uio[16];
	uint64_t seed;
	struct nvme_ctrl c;
	bool open;
	unsigned long long ios;		/* of controllers already closed */
	uint64_t scratch;		/* first LBA the tests may write */
};

static void ctrl_open(struct __test_metadata *_metadata,
		      FIXTURE_DATA(nvme) *self)
{
	/* Deep queues: as deep as CAP.MQES lets the driver make them. */
	struct nvme_opts opts = { .io_queues = 2, .io_depth = 65536 };
	int ret;

	ASSERT_LE(0, wait_uio_of(self->pci, self->uio, sizeof(self->uio), 5000))
		TH_LOG("%s has no UIO device: not bound to uio_pci_generic",
		       self->pci);
	ret = nvme_open(&self->c, self->uio, &opts);
	ASSERT_EQ(0, ret) TH_LOG("nvme_open(%s): %s", self->uio, self->c.err);
	self->open = true;
	self->scratch = nvme_pattern_scratch(self->c.nsze * self->c.lba_size) /
			self->c.lba_size;
}

static int ctrl_close(FIXTURE_DATA(nvme) *self)
{
	int ret;

	if (!self->open)
		return 0;
	self->ios += self->c.ios;
	self->open = false;
	ret = nvme_close(&self->c);
	if (ret)
		fprintf(stderr, "# nvme_close: %s\n", self->c.err);
	return ret;
}

FIXTURE_SETUP(nvme)
{
	const char *pci = getenv("UIOHEAP_NVME");
	const char *seed = getenv("UIOHEAP_NVME_SEED");

	ASSERT_TRUE(pci && *pci)
		TH_LOG("UIOHEAP_NVME unset: the VM has no NVMe controller");
	ASSERT_GT(sizeof(self->pci), strlen(pci));
	memcpy(self->pci, pci, strlen(pci) + 1);
	ASSERT_TRUE(seed && *seed)
		TH_LOG("UIOHEAP_NVME_SEED unset: the image's contents are unknown");
	self->seed = strtoull(seed, NULL, 0);
	ctrl_open(_metadata, self);
}

FIXTURE_TEARDOWN(nvme)
{
	EXPECT_EQ(0, ctrl_close(self));
	printf("# summary: nvme_ios=%llu\n", self->ios);
	fflush(stdout);
}

/* A data buffer from the coherent node, or from uioN-cached. */
/*
 * nvme_rw() with the hand-overs a buffer of the cached node needs (no-ops
 * on the coherent one): to the device before the command, back to the
 * CPU after it.  Reads are BIDIRECTIONAL: the tests fill a buffer with a
 * guard pattern before the device writes part of it, and read both.
 */
static int synced_rw(struct nvme_ctrl *c, bool write, uint64_t lba,
		     uint32_t nlb, struct nvme_dma *buf, size_t off)
{
	enum nvme_dma_dir dir = write ? NVME_DMA_TO_DEVICE : NVME_DMA_BIDIRECTIONAL;

	return nvme_dma_for_device(c, buf, dir) ? :
	       nvme_rw(c, write, lba, nlb, buf, off) ? :
	       nvme_dma_for_cpu(c, buf, dir);
}

/*
 * Reads @nlb blocks at @lba into @buf at @off and checks them against the
 * image, and that the bytes around them were not touched.
 */
static void read_check(struct __test_metadata *_metadata, struct nvme_ctrl *c,
		       uint64_t seed, uint64_t lba, uint32_t nlb,
		       struct nvme_dma *buf, size_t off)
{
	size_t len = (size_t)nlb * c->lba_size;
	uint8_t *p = buf->cpu;
	long long bad;

	ASSERT_EQ(0, nvme_dma_for_cpu(c, buf, NVME_DMA_BIDIRECTIONAL));
	memset(buf->cpu, 0xa5, buf->len);
	ASSERT_EQ(0, synced_rw(c, false, lba, nlb, buf, off))
		TH_LOG("read of %u blocks at %llu: %s", nlb,
		       (unsigned long long)lba, c->err);
	bad = nvme_pattern_check(p + off, lba * c->lba_size, len, seed);
	ASSERT_EQ(-1, bad)
		TH_LOG("read of %u blocks at LBA %llu, buffer offset %zu: wrong data at byte %lld",
		       nlb, (unsigned long long)lba, off, bad);
	if (off)
		ASSERT_EQ(0xa5, p[off - 1]) TH_LOG("DMA before the buffer");
	if (off + len < buf->len)
		ASSERT_EQ(0xa5, p[off + len]) TH_LOG("DMA past the transfer");
}

/* Opens the controller again, and reads a page as a check that it works. */
static void reopen_and_read(struct __test_metadata *_metadata,
			    FIXTURE_DATA(nvme) *self)
{
	struct nvme_dma buf;

	ctrl_open(_metadata, self);
	ASSERT_EQ(0, nvme_dma_alloc(&self->c, &buf, self->c.page));
	read_check(_metadata, &self->c, self->seed, 0,
		   self->c.page / self->c.lba_size ? : 1, &buf, 0);
	nvme_dma_free(&buf);
}

TEST_F_TIMEOUT(nvme, identify_reads_the_device, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_queue *q = &c->ioq[0];

	TH_LOG("%s %s: \"%s\" serial \"%s\" fw \"%s\", page %zu, max transfer %zu, %d queues of %u, ns %u: %llu x %u bytes",
	       self->uio, self->pci, c->mn, c->sn, c->fr, c->page, c->max_xfer,
	       c->nr_ioq, q->depth, c->nsid, (unsigned long long)c->nsze,
	       c->lba_size);
	/* The host gave the controller this serial (tests/vm/run-vm.sh). */
	EXPECT_STREQ("uioheap0", c->sn);
	EXPECT_LE(512, c->lba_size);
	EXPECT_EQ(0, c->lba_size & (c->lba_size - 1));
	EXPECT_LE(c->page, c->max_xfer);
	EXPECT_EQ(0, c->max_xfer % c->lba_size);
	EXPECT_LE(2, q->depth);
	EXPECT_LE(1, c->nr_ioq);
	/* The image is 64 MiB: the namespace is all of it. */
	EXPECT_EQ(64ull << 20, c->nsze * c->lba_size);
}

/*
 * Buffers of uioN-cached come from that node, and say whether the syncs
 * do anything on this machine: on x86 every PCI device snoops the CPU's
 * caches, so the data is right even without them, and it is the path
 * (the ioctls accepted for every direction, the data intact) that the
 * cached tests prove here, not the cache maintenance.
 */
static void cached_node_check(struct __test_metadata *_metadata,
			      FIXTURE_DATA(nvme) *self, struct nvme_dma *buf)
{
	char path[96];

	ASSERT_TRUE(buf->cached);
	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s-cached/buffers",
		 self->uio);
	ASSERT_LE(1, read_ull(path, 0)) TH_LOG("%s: no buffer allocated there", path);
	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s-cached/coherent",
		 self->uio);
	TH_LOG("%s-cached: coherent=%llu (1: the device snoops, SYNC is cheap)",
	       self->uio, read_ull(path, 2));
}

/*
 * Single blocks, whole pages, random lengths up to two pages at random
 * dword-aligned offsets, and (PRP list) one transfer of max_xfer, all
 * checked against the image.
 */
static void reads_match(struct __test_metadata *_metadata,
			FIXTURE_DATA(nvme) *self, bool cached)
{
	struct nvme_ctrl *c = &self->c;
	uint32_t per = c->lba_size >= c->page ? 1 : c->page / c->lba_size;
	uint64_t lba;
	struct prng s;
	struct nvme_dma buf, big;
	uint32_t nlb;
	int i;

	prng_seed(&s, self->seed);
	ASSERT_EQ(0, nvme_dma_alloc_data(c, &buf, 4 * c->page, cached)) TH_LOG("%s", c->err);
	if (cached)
		cached_node_check(_metadata, self, &buf);
	/* One block; one whole page; a block at the end of the image area. */
	read_check(_metadata, c, self->seed, 0, 1, &buf, 0);
	read_check(_metadata, c, self->seed, 1, per, &buf, 0);
	read_check(_metadata, c, self->seed, self->scratch - 1, 1, &buf, 0);
	/* Random blocks across the pattern area, up to two pages. */
	for (i = 0; i < 64; i++) {
		lba = prng_next(&s) % (self->scratch - 2 * per);
		nlb = 1 + prng_next(&s) % (2 * per);
		read_check(_metadata, c, self->seed, lba, nlb, &buf,
			   (prng_next(&s) % c->page) & ~(size_t)3);
	}
	nvme_dma_free(&buf);
	ASSERT_EQ(0, nvme_dma_alloc_data(c, &big, c->max_xfer + c->page, cached))
		TH_LOG("%s", c->err);
	read_check(_metadata, c, self->seed, 5, c->max_xfer / c->lba_size,
		   &big, c->page / 2);
	nvme_dma_free(&big);
}

TEST_F_TIMEOUT(nvme, reads_match_the_image, TIMEOUT)
{
	reads_match(_metadata, self, false);
}

TEST_F_TIMEOUT(nvme, cached_reads_match_the_image, TIMEOUT)
{
	reads_match(_metadata, self, true);
}

/*
 * PRP1 alone, PRP1 + PRP2, and PRP lists: lengths around page multiples,
 * at buffer offsets that move where the pages start, up to MDTS.
 */
TEST_F_TIMEOUT(nvme, prp_list_transfers, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	uint32_t max = c->max_xfer / c->lba_size, pb = c->page / c->lba_size;
	const size_t offs[] = { 0, 4, 512, c->page / 2, c->page - 4 };
	uint32_t lens[] = { 1, pb, pb + 1, 2 * pb, 2 * pb + 1, 3 * pb,
			    max / 2, max - 1, max };
	struct nvme_dma buf;
	unsigned int i, j;

	/* Lists are only needed beyond two pages; MDTS must allow that. */
	ASSERT_LT(2 * c->page, c->max_xfer);
	ASSERT_EQ(0, nvme_dma_alloc(c, &buf, c->max_xfer + c->page))
		TH_LOG("%s", c->err);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		if (!lens[i] || lens[i] > max)
			continue;
		for (j = 0; j < ARRAY_SIZE(offs); j++)
			read_check(_metadata, c, self->seed, 7 * i + j,
				   lens[i], &buf, offs[j]);
	}
	nvme_dma_free(&buf);
}

/* Writes to the scratch area read back; the blocks around stay as they were. */
static void writes_read_back(struct __test_metadata *_metadata,
			     FIXTURE_DATA(nvme) *self, bool cached)
{
	struct nvme_ctrl *c = &self->c;
	uint32_t max = c->max_xfer / c->lba_size, pb = c->page / c->lba_size;
	uint32_t lens[] = { 1, pb ? pb : 1, 2 * pb + 1, max };
	uint64_t lba = self->scratch + 1, *w;
	struct prng s;
	struct nvme_dma out, in, around, was;
	size_t len, k, bs = c->lba_size;
	unsigned int i;

	/* The cached test writes further on: the two may run on one image. */
	if (cached)
		lba += 4 * max + 8;
	prng_seed(&s, now_ms());
	ASSERT_EQ(0, nvme_dma_alloc_data(c, &out, c->max_xfer + c->page, cached));
	ASSERT_EQ(0, nvme_dma_alloc_data(c, &in, c->max_xfer, cached));
	ASSERT_EQ(0, nvme_dma_alloc_data(c, &around, 2 * bs, cached));
	ASSERT_EQ(0, nvme_dma_alloc_data(c, &was, 2 * bs, cached));
	if (cached)
		cached_node_check(_metadata, self, &out);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		if (!lens[i] || lens[i] > max)
			continue;
		len = (size_t)lens[i] * bs;
		ASSERT_GE(c->nsze, lba + lens[i] + 1);
		/* The blocks either side, before the write. */
		ASSERT_EQ(0, synced_rw(c, false, lba - 1, 1, &was, 0));
		ASSERT_EQ(0, synced_rw(c, false, lba + lens[i], 1, &was, bs));

		/*
		 * Random data, from a dword-aligned offset in the buffer: the
		 * CPU takes the buffer, fills it, and synced_rw() hands it to
		 * the device (END WRITE) before the write command.
		 */
		ASSERT_EQ(0, nvme_dma_for_cpu(c, &out, NVME_DMA_TO_DEVICE));
		w = (uint64_t *)((uint8_t *)out.cpu + 4 * i);
		for (k = 0; k < len / 8; k++)
			w[k] = prng_next(&s);
		ASSERT_EQ(0, synced_rw(c, true, lba, lens[i], &out, 4 * i))
			TH_LOG("write of %u blocks at %llu: %s", lens[i],
			       (unsigned long long)lba, c->err);

		ASSERT_EQ(0, nvme_dma_for_cpu(c, &in, NVME_DMA_BIDIRECTIONAL));
		memset(in.cpu, 0xa5, in.len);
		ASSERT_EQ(0, synced_rw(c, false, lba, lens[i], &in, 0))
			TH_LOG("%s", c->err);
		EXPECT_EQ(0, memcmp(in.cpu, w, len))
			TH_LOG("%u blocks at LBA %llu did not read back",
			       lens[i], (unsigned long long)lba);
		ASSERT_EQ(0, synced_rw(c, false, lba - 1, 1, &around, 0));
		ASSERT_EQ(0, synced_rw(c, false, lba + lens[i], 1, &around, bs));
		EXPECT_EQ(0, memcmp(around.cpu, was.cpu, 2 * bs))
			TH_LOG("a block next to the write changed");
		lba += lens[i] + 2;
	}
	nvme_dma_free(&out);
	nvme_dma_free(&in);
	nvme_dma_free(&around);
	nvme_dma_free(&was);
}

TEST_F_TIMEOUT(nvme, writes_read_back, TIMEOUT)
{
	writes_read_back(_metadata, self, false);
}

TEST_F_TIMEOUT(nvme, cached_writes_read_back, TIMEOUT)
{
	writes_read_back(_metadata, self, true);
}

/*
 * Every I/O queue filled to depth - 1 commands before the first
 * completion is reaped: single blocks into their own slots, then
 * three-page reads, each with its own PRP list, into a ring of slots that
 * commands reading the same blocks share.  The second time the queue is
 * plugged: one doorbell for all the commands, and no reaping before it.
 */
static void fill_queues(struct __test_metadata *_metadata,
			FIXTURE_DATA(nvme) *self, bool lists)
{
	struct nvme_ctrl *c = &self->c;
	size_t bs = c->lba_size, slot = lists ? 3 * c->page : bs;
	uint32_t nlb = slot / bs;
	unsigned int total = 0, done = 0, i, k, nslots;
	struct nvme_dma buf[NVME_MAX_IOQ];
	struct nvme_cpl cpl[64];
	uint8_t *seen[NVME_MAX_IOQ];
	struct nvme_queue *q;
	int qi, n;

	for (qi = 0; qi < c->nr_ioq; qi++) {
		q = &c->ioq[qi];
		nslots = q->depth - 1;
		if ((size_t)nslots * slot > (1u << 20))
			nslots = (1u << 20) / slot;
		ASSERT_EQ(0, nvme_dma_alloc(c, &buf[qi], nslots * slot))
			TH_LOG("%s", c->err);
		seen[qi] = calloc(q->depth, 1);
		ASSERT_NE(NULL, seen[qi]);
		if (lists)
			nvme_plug(q);
		for (i = 0; i < q->depth - 1u; i++) {
			k = i % nslots;
			ASSERT_EQ(0, nvme_submit_rw(c, q, false,
						    (qi * nslots + k) * nlb, nlb,
						    &buf[qi], k * slot, NULL))
				TH_LOG("command %u of %u: %s", i, q->depth - 1,
				       c->err);
		}
		/* depth - 1 in flight is full: the SQ would wrap onto its head. */
		EXPECT_EQ(-EAGAIN, nvme_submit_rw(c, q, false, 0, 1, &buf[qi],
						  0, NULL));
		if (lists) {
			EXPECT_EQ(-EINVAL, nvme_reap(c, q, cpl, 64));
			EXPECT_NE(NULL, strstr(c->err, "plugged")) TH_LOG("%s", c->err);
			nvme_unplug(q);
		}
		total += q->depth - 1;
	}
	for (qi = 0; qi < c->nr_ioq; qi++) {
		q = &c->ioq[qi];
		while (q->inflight) {
			n = nvme_reap(c, q, cpl, 64);
			ASSERT_LT(0, n) TH_LOG("%d of %u done: %s", done, total,
					       c->err);
			for (i = 0; i < (unsigned int)n; i++) {
				EXPECT_EQ(0, cpl[i].status);
				EXPECT_EQ(0, seen[qi][cpl[i].cid])
					TH_LOG("cid %u completed twice", cpl[i].cid);
				seen[qi][cpl[i].cid] = 1;
			}
			done += n;
		}
	}
	EXPECT_EQ(total, done);
	for (qi = 0; qi < c->nr_ioq; qi++) {
		nslots = buf[qi].len / slot;
		for (k = 0; k < nslots; k++)
			ASSERT_EQ(-1, nvme_pattern_check((uint8_t *)buf[qi].cpu + k * slot,
							 (qi * nslots + k) * slot,
							 slot, self->seed))
				TH_LOG("queue %d slot %u holds the wrong data", qi, k);
		nvme_dma_free(&buf[qi]);
		free(seen[qi]);
	}
	TH_LOG("%u commands of %zu bytes in flight on %d queue(s)", total,
	       slot, c->nr_ioq);
}

TEST_F_TIMEOUT(nvme, full_queue_completes, TIMEOUT)
{
	fill_queues(_metadata, self, false);
	fill_queues(_metadata, self, true);
}

/*
 * The controller is given the address the heap reported.  Behind an
 * IOMMU that is an IOVA, never the memory's physical address; without
 * one it is the physical address, page by page.  Either way DMA lands
 * where the CPU sees it: the data buffer is filled by the controller, and
 * the queue pages hold the commands it fetched.
 *
 * Where a page physically is comes from /proc/kcore, or where a kernel
 * has none, from the DMA API's own debugging records.
 */
TEST_F_TIMEOUT(nvme, dma_addresses_follow_the_iommu, TIMEOUT)
{
	const char *iommu = getenv("UIOHEAP_IOMMU");
	struct nvme_ctrl *c = &self->c;
	long ps = sysconf(_SC_PAGESIZE);
	unsigned int i, same = 0, pages = 0;
	struct nvme_dma *bufs[3], data;
	char path[96], type[16];
	enum page_is is;
	uint64_t phys;
	int kcore, at;
	FILE *f;
	size_t off;
	bool on;

	ASSERT_TRUE(iommu && (!strcmp(iommu, "on") || !strcmp(iommu, "off")))
		TH_LOG("UIOHEAP_IOMMU must say what the host asked for");
	on = !strcmp(iommu, "on");
	/* The heap says how its device's addresses are translated. */
	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/iommu", self->uio);
	f = fopen(path, "re");
	ASSERT_NE(NULL, f) TH_LOG("%s: %s", path, strerror(errno));
	ASSERT_EQ(1, fscanf(f, "%15s", type));
	fclose(f);
	EXPECT_TRUE(on ? !strcmp(type, "dma") || !strcmp(type, "dma-fq") :
		    !strcmp(type, "none"))
		TH_LOG("IOMMU %s, but %s says \"%s\"", iommu, path, type);
	kcore = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(kcore >= 0 || !access(DMA_API_DUMP, R_OK))
		TH_LOG("neither /proc/kcore nor %s: run as root", DMA_API_DUMP);

	ASSERT_EQ(0, nvme_dma_alloc(c, &data, c->max_xfer)) TH_LOG("%s", c->err);
	read_check(_metadata, c, self->seed, 3, c->max_xfer / c->lba_size,
		   &data, 0);
	bufs[0] = &data;
	bufs[1] = &c->admin.sq;
	bufs[2] = &c->ioq[0].sq;
	for (i = 0; i < 3; i++) {
		if (kcore < 0) {
			/* The first page of each buffer, from the DMA API. */
			phys = dma_debug_phys(self->pci, bufs[i]->addr);
			ASSERT_NE(0, phys) TH_LOG("%s: no mapping at %#llx", DMA_API_DUMP,
						  (unsigned long long)bufs[i]->addr);
			at = phys == bufs[i]->addr;
			pages++;
			same += at;
			continue;
		}
		/* Queues: their first page, where the commands so far are. */
		for (off = 0; off < (i ? (size_t)ps : bufs[i]->len); off += ps) {
			is = kcore_page(kcore, bufs[i]->addr + off,
					(uint8_t *)bufs[i]->cpu + off);
			ASSERT_NE(PAGE_UNKNOWN, is) TH_LOG("/proc/kcore unreadable");
			at = is == PAGE_AT_ADDR;
			pages++;
			same += at;
		}
	}
	if (kcore >= 0)
		close(kcore);
	TH_LOG("IOMMU %s: %u of %u pages at their DMA address as physical address (data at %#llx, from %s)",
	       iommu, same, pages, (unsigned long long)data.addr,
	       kcore >= 0 ? "/proc/kcore" : DMA_API_DUMP);
	/* Behind the IOMMU no page, without it every page. */
	EXPECT_EQ(on ? 0 : pages, same);
	nvme_dma_free(&data);
}

/* Command errors come back decoded; the controller goes on working. */
TEST_F_TIMEOUT(nvme, command_errors_are_decoded, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_sqe cmd = { .opc = 0x06, .cdw10 = 0xff };	/* bad CNS */
	struct nvme_dma buf;

	ASSERT_EQ(0, nvme_dma_alloc(c, &buf, c->page));
	cmd.prp1 = buf.addr;
	EXPECT_EQ(-EIO, nvme_rw(c, false, c->nsze, 1, &buf, 0));
	EXPECT_EQ(0x080, c->status & 0x7ff);
	EXPECT_NE(NULL, strstr(c->err, "LBA Out of Range")) TH_LOG("%s", c->err);
	TH_LOG("%s", c->err);

	EXPECT_EQ(-EIO, nvme_admin(c, &cmd, "Identify CNS 0xff", NULL));
	EXPECT_EQ(0x002, c->status & 0x7ff);
	EXPECT_NE(NULL, strstr(c->err, "Invalid Field in Command"))
		TH_LOG("%s", c->err);
	TH_LOG("%s", c->err);

	read_check(_metadata, c, self->seed, 0, 1, &buf, 0);
	nvme_dma_free(&buf);
}

/*
 * A command the controller cannot fetch (bus mastering switched off
 * behind the driver's back) times out with the controller's status in
 * the message; the next nvme_open() recovers the controller.
 */
TEST_F_TIMEOUT(nvme, timeout_is_reported, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_cpl cpl;
	struct nvme_dma buf;
	char path[128];
	uint16_t cmd;
	int cfg;

	ASSERT_EQ(0, nvme_dma_alloc(c, &buf, c->page));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", self->pci);
	cfg = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, cfg);
	ASSERT_EQ(2, pread(cfg, &cmd, 2, 4));
	cmd &= ~0x4;	/* PCI_COMMAND_MASTER */
	ASSERT_EQ(2, pwrite(cfg, &cmd, 2, 4));

	c->cmd_timeout_ms = 2000;
	ASSERT_EQ(0, nvme_submit_rw(c, &c->ioq[0], false, 0, 1, &buf, 0, NULL));
	EXPECT_EQ(-ETIMEDOUT, nvme_reap(c, &c->ioq[0], &cpl, 1));
	EXPECT_NE(NULL, strstr(c->err, "no completion within 2000 ms"))
		TH_LOG("%s", c->err);
	EXPECT_NE(NULL, strstr(c->err, "CSTS")) TH_LOG("%s", c->err);
	TH_LOG("%s", c->err);

	cmd |= 0x4;
	ASSERT_EQ(2, pwrite(cfg, &cmd, 2, 4));
	close(cfg);
	nvme_dma_free(&buf);
	/* Whatever state it is in now, closing is bounded, and open resets. */
	ctrl_close(self);
	reopen_and_read(_metadata, self);
}

/*
 * The example program, run as a user would run it: identify, and a 4 MiB
 * read to stdout, more than one buffer's worth of chunks, that must be
 * the image; then the same with its buffer from uioN-cached (-c).  It
 * opens the controller itself, so the fixture's driver lets go first.
 */
TEST_F_TIMEOUT(nvme, program_reads_the_image, TIMEOUT)
{
	static const char * const flags[] = { "", "-c " };
	uint32_t lba_size = self->c.lba_size;
	size_t len = 4 << 20, got, n;
	char cmd[192], line[256];
	unsigned long long ios;
	bool serial = false;
	unsigned int i;
	uint8_t *data;
	FILE *f;

	ASSERT_EQ(0, access("./uio-nvme", X_OK)) TH_LOG("no ./uio-nvme in the payload");
	ASSERT_EQ(0, ctrl_close(self));

	snprintf(cmd, sizeof(cmd), "./uio-nvme %s identify 2>&1", self->uio);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		printf("# %s", line);
		serial |= strstr(line, "serial uioheap0") != NULL;
	}
	EXPECT_EQ(0, pclose(f));
	EXPECT_TRUE(serial);

	data = malloc(len + 1);
	ASSERT_NE(NULL, data);
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		snprintf(cmd, sizeof(cmd), "./uio-nvme %s%s read 0 %zu 2>/tmp/uio-nvme.err",
			 flags[i], self->uio, len / lba_size);
		f = popen(cmd, "r");
		ASSERT_NE(NULL, f);
		for (got = 0; (n = fread(data + got, 1, len + 1 - got, f)) > 0; )
			got += n;
		EXPECT_EQ(0, pclose(f)) TH_LOG("%s", cmd);
		EXPECT_EQ(len, got) TH_LOG("%s", cmd);
		EXPECT_EQ(-1, nvme_pattern_check(data, 0, len, self->seed))
			TH_LOG("%s", cmd);
		/* It says how many commands it ran: "uio-nvme: N I/O commands". */
		f = fopen("/tmp/uio-nvme.err", "re");
		ASSERT_NE(NULL, f);
		ios = 0;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "uio-nvme: %llu I/O commands", &ios) != 1)
				printf("# %s", line);
		fclose(f);
		EXPECT_LE(len / (self->c.max_xfer ? : len), ios);
		self->ios += ios;
	}
	free(data);
}

/* Not an NVMe controller, no UIO device, no heap: refused, and said why. */
TEST_F_TIMEOUT(nvme, bad_input_is_refused, TIMEOUT)
{
	const char *ko = getenv("UIOHEAP_KO");
	char edu[16] = "", node[64];
	struct nvme_ctrl other;
	const char *edus;

	edus = getenv("UIOHEAP_EDU_UIO");
	ASSERT_TRUE(edus && sscanf(edus, "%15s", edu) == 1)
		TH_LOG("UIOHEAP_EDU_UIO names no edu device");
	EXPECT_EQ(-ENODEV, nvme_open(&other, edu, NULL));
	EXPECT_NE(NULL, strstr(other.err, "is not an NVMe controller"))
		TH_LOG("%s", other.err);
	TH_LOG("%s", other.err);
	EXPECT_EQ(-ENODEV, nvme_open(&other, "uio999", NULL));
	EXPECT_NE(NULL, strstr(other.err, "no such UIO device"))
		TH_LOG("%s", other.err);
	TH_LOG("%s", other.err);

	/* No heap: unload uio_heap (nothing may hold it), then load it again. */
	ASSERT_TRUE(ko && *ko) TH_LOG("UIOHEAP_KO unset");
	ASSERT_EQ(0, ctrl_close(self));
	ASSERT_EQ(0, syscall(__NR_delete_module, "uio_heap", O_NONBLOCK))
		TH_LOG("rmmod uio_heap: %s", strerror(errno));
	EXPECT_EQ(-ENOENT, nvme_open(&other, self->uio, NULL));
	EXPECT_NE(NULL, strstr(other.err, "is uio_heap loaded?"))
		TH_LOG("%s", other.err);
	TH_LOG("%s", other.err);
	{
		int fd = open(ko, O_RDONLY | O_CLOEXEC);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, syscall(__NR_finit_module, fd, "", 0))
			TH_LOG("insmod %s: %s", ko, strerror(errno));
		close(fd);
	}
	snprintf(node, sizeof(node), "/dev/dma_heap/%s", self->uio);
	ASSERT_LE(0, wait_path(node, true, 5000)) TH_LOG("%s did not come back", node);
	reopen_and_read(_metadata, self);
}

/*
 * The device never reaches a freed buffer: its IOVA is unmapped and the
 * IOTLB flushed before the pages go back, in lazy (flush-queue) mode too,
 * where the IOMMU would otherwise go on translating it from its IOTLB
 * until the queue drains (10 ms).  The controller reads into a buffer (so
 * the translation is cached), the buffer is freed, another device's heap
 * takes memory (quite likely the same pages) at once, and the controller
 * is told to read into the stale IOVA: the IOMMU must fault, and none of
 * that memory may change.  Another device's, because in strict mode this
 * one's next buffer may get the freed IOVA back, legitimately.  (x86 only:
 * the verdict reads intel-iommu's fault reports.)
 */
TEST_F_TIMEOUT(nvme, freed_buffer_is_out_of_the_devices_reach, TIMEOUT)
{
	const uint32_t nlb = self->c.page / self->c.lba_size;
	char path[128], mode[16] = "", pci[32], edu[16];
	struct nvme_dma buf, stale;
	int kfd, ret, heap, taken;
	unsigned char *p;

	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/iommu", self->c.uio);
	ASSERT_LT(0, read_str(path, mode, sizeof(mode)));
	if (strncmp(mode, "dma", 3))
		SKIP(return, "no IOMMU: a freed buffer's address is physical");
#ifndef __x86_64__
	SKIP(return, "the verdict reads only intel-iommu's fault reports");
#endif
	ASSERT_EQ(0, edu_pci(false, pci, sizeof(pci)));
	ASSERT_EQ(0, uio_of_pci(pci, edu, sizeof(edu)));
	heap = uioheap_open(edu);
	ASSERT_LE(0, heap);
	ASSERT_EQ(0, nvme_dma_alloc(&self->c, &buf, SZ_64K));
	ASSERT_EQ(0, nvme_rw(&self->c, false, 0, nlb, &buf, 0)) TH_LOG("%s", self->c.err);

	kfd = expect_fault_begin(self->pci);
	ASSERT_LE(0, kfd);
	stale = buf;
	nvme_dma_free(&buf);
	taken = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, taken);
	p = uioheap_map(taken, SZ_64K);
	ASSERT_NE(NULL, p);
	memset(p, 0x5a, SZ_64K);
	/* QEMU's controller may complete it anyway: the IOMMU is the judge. */
	ret = nvme_rw(&self->c, false, 0, nlb, &stale, 0);
	EXPECT_TRUE(!ret || ret == -EIO) TH_LOG("%s", self->c.err);
	EXPECT_TRUE(expect_fault_end(kfd, self->pci, 10000))
		TH_LOG("no IOMMU fault for the freed buffer's IOVA");
	EXPECT_TRUE(is_filled(p, SZ_64K, 0x5a))
		TH_LOG("memory taken after the free was written");
	munmap(p, SZ_64K);
	close(taken);
	close(heap);
}

/*
 * Unbinding the controller while the driver holds its buffers revokes
 * them: mappings raise SIGBUS, address queries fail, and the driver only
 * resets the controller.  Rebound, it works again.
 */
TEST_F_TIMEOUT(nvme, unbind_revokes_buffers, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_dma buf;
	unsigned char byte;
	char node[64];
	uint64_t addr;

	ASSERT_EQ(0, nvme_dma_alloc(c, &buf, c->max_xfer));
	read_check(_metadata, c, self->seed, 0, c->max_xfer / c->lba_size,
		   &buf, 0);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	snprintf(node, sizeof(node), "/dev/dma_heap/%s", self->uio);
	EXPECT_LE(0, wait_path(node, false, 1000));
	EXPECT_EQ(SIGBUS, probe_read8(buf.cpu, &byte));
	EXPECT_EQ(SIGBUS, probe_read8(c->admin.sq.cpu, &byte));
	EXPECT_EQ(SIGBUS, probe_read8(c->ioq[0].cq.cpu, &byte));
	EXPECT_EQ(-ENODEV, uioheap_dma_addr(c->heap_fd, buf.fd, &addr, NULL));
	nvme_dma_free(&buf);
	/* The driver sees the revocation and does not touch the queues. */
	EXPECT_EQ(-ENODEV, ctrl_close(self));
	EXPECT_NE(NULL, strstr(c->err, "revoked")) TH_LOG("%s", c->err);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	ASSERT_LE(0, wait_uio_of(self->pci, self->uio, sizeof(self->uio), 5000));
	snprintf(node, sizeof(node), "/dev/dma_heap/%s", self->uio);
	ASSERT_LE(0, wait_path(node, true, 5000)) TH_LOG("%s did not come back", node);
	reopen_and_read(_metadata, self);
}

TEST_HARNESS_MAIN
