// SPDX-License-Identifier: GPL-2.0
/*
 * tools/nvme/'s driver runs QEMU's nvme (UIOHEAP_NVME, on uio_pci_generic; missing fails) through
 * heap buffers; reads are checked against the image UIOHEAP_NVME_SEED filled (nvme/pattern.h).
 */
#include "kselftest_harness.h"
#include "common.h"
#include "nvme/nvme.h"
#include "nvme/pattern.h"

#include <linux/pci_regs.h>

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

static void ctrl_open(struct __test_metadata *_metadata, FIXTURE_DATA(nvme) *self)
{
	/* Deep queues: as deep as CAP.MQES lets the driver make them. */
	struct nvme_opts opts = { .io_queues = 2, .io_depth = 65536 };

	ASSERT_LE(0, wait_uio_of(self->pci, self->uio, sizeof(self->uio), 5000))
		TH_LOG("%s has no UIO device: not bound to uio_pci_generic", self->pci);
	ASSERT_EQ(0, nvme_open(&self->c, self->uio, &opts))
		TH_LOG("nvme_open(%s): %s", self->uio, self->c.err);
	self->open = true;
	self->scratch = nvme_pattern_scratch(self->c.nsze * self->c.lba_size) / self->c.lba_size;
}

static int ctrl_close(FIXTURE_DATA(nvme) *self)
{
	if (!self->open)
		return 0;
	self->ios += self->c.ios;
	self->open = false;
	return nvme_close(&self->c);
}

FIXTURE_SETUP(nvme)
{
	const char *pci = getenv("UIOHEAP_NVME"), *seed = getenv("UIOHEAP_NVME_SEED");

	ASSERT_TRUE(pci && *pci) TH_LOG("UIOHEAP_NVME unset: the VM has no NVMe controller");
	ASSERT_GT(sizeof(self->pci), strlen(pci));
	memcpy(self->pci, pci, strlen(pci) + 1);
	ASSERT_TRUE(seed && *seed)
		TH_LOG("UIOHEAP_NVME_SEED unset: the image's contents are unknown");
	self->seed = strtoull(seed, NULL, 0);
	ctrl_open(_metadata, self);
}

FIXTURE_TEARDOWN(nvme)
{
	EXPECT_EQ(0, ctrl_close(self)) TH_LOG("nvme_close: %s", self->c.err);
	summary("nvme_ios=%llu", self->ios);
}

/* nvme_rw() with uioN-cached's syncs; reads are BIDIRECTIONAL for the guard bytes around. */
static int synced_rw(struct nvme_ctrl *c, bool write, uint64_t lba, uint32_t nlb,
		     struct nvme_dma *buf, size_t off)
{
	enum nvme_dma_dir dir = write ? NVME_DMA_TO_DEVICE : NVME_DMA_BIDIRECTIONAL;

	return nvme_dma_for_device(c, buf, dir) ? :
	       nvme_rw(c, write, lba, nlb, buf, off) ? :
	       nvme_dma_for_cpu(c, buf, dir);
}

/* Reads @nlb blocks at @lba into @buf at @off: the image, and nothing around it touched. */
static void read_check(struct __test_metadata *_metadata, FIXTURE_DATA(nvme) *self,
		       uint64_t lba, uint32_t nlb, struct nvme_dma *buf, size_t off)
{
	struct nvme_ctrl *c = &self->c;
	size_t len = (size_t)nlb * c->lba_size;
	uint8_t *p = buf->cpu;
	long long bad;

	ASSERT_EQ(0, nvme_dma_for_cpu(c, buf, NVME_DMA_BIDIRECTIONAL));
	memset(buf->cpu, 0xa5, buf->len);
	ASSERT_EQ(0, synced_rw(c, false, lba, nlb, buf, off))
		TH_LOG("read of %u blocks at %llu: %s", nlb, (unsigned long long)lba, c->err);
	bad = nvme_pattern_check(p + off, lba * c->lba_size, len, self->seed);
	ASSERT_EQ(-1, bad)
		TH_LOG("read of %u blocks at LBA %llu, buffer offset %zu: wrong data at byte %lld",
		       nlb, (unsigned long long)lba, off, bad);
	if (off)
		ASSERT_EQ(0xa5, p[off - 1]) TH_LOG("DMA before the buffer");
	if (off + len < buf->len)
		ASSERT_EQ(0xa5, p[off + len]) TH_LOG("DMA past the transfer");
}

/* A data buffer from uioN or uioN-cached (x86 devices snoop: there only the path is proven). */
static void data_alloc(struct __test_metadata *_metadata, FIXTURE_DATA(nvme) *self,
		       struct nvme_dma *buf, size_t len, bool cached)
{
	char path[96];

	ASSERT_EQ(0, nvme_dma_alloc_data(&self->c, buf, len, cached)) TH_LOG("%s", self->c.err);
	if (!cached)
		return;
	ASSERT_TRUE(buf->cached);
	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s-cached/buffers", self->uio);
	ASSERT_LE(1, read_ull(path, 0)) TH_LOG("%s: no buffer allocated there", path);
}

/* Reopens the controller, once its UIO device and heap are back, and reads a page. */
static void reopen_and_read(struct __test_metadata *_metadata, FIXTURE_DATA(nvme) *self)
{
	struct nvme_dma buf;

	ASSERT_LE(0, wait_heap_of(self->pci, self->uio, sizeof(self->uio), 10000))
		TH_LOG("%s: no UIO device and heap", self->pci);
	ctrl_open(_metadata, self);
	data_alloc(_metadata, self, &buf, self->c.page, false);
	read_check(_metadata, self, 0, self->c.page / self->c.lba_size ? : 1, &buf, 0);
}

/* A call that returned @ret must have failed with @want, saying @what. */
static void expect_failed(struct __test_metadata *_metadata, int want, int ret,
			  const struct nvme_ctrl *c, const char *what)
{
	TH_LOG("%s", c->err);
	EXPECT_EQ(want, ret) TH_LOG("expected to fail with \"%s\"", what);
	EXPECT_NE(NULL, strstr(c->err, what)) TH_LOG("no \"%s\"", what);
}

TEST_F_TIMEOUT(nvme, identify_reads_the_device, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_queue *q = &c->ioq[0];

	TH_LOG("%s %s: \"%s\" sn \"%s\" fw \"%s\", page %zu, xfer %zu, %dx%u deep, ns %u: %llux%u",
	       self->uio, self->pci, c->mn, c->sn, c->fr, c->page, c->max_xfer,
	       c->nr_ioq, q->depth, c->nsid, (unsigned long long)c->nsze, c->lba_size);
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

/* Blocks, pages, random lengths and dword-aligned offsets up to two pages, one max_xfer. */
static void reads_match(struct __test_metadata *_metadata, FIXTURE_DATA(nvme) *self, bool cached)
{
	struct nvme_ctrl *c = &self->c;
	uint32_t per = c->lba_size >= c->page ? 1 : c->page / c->lba_size;
	struct nvme_dma buf, big;
	struct prng s;
	uint64_t lba;
	uint32_t nlb;
	int i;

	prng_seed(&s, self->seed);
	data_alloc(_metadata, self, &buf, 4 * c->page, cached);
	read_check(_metadata, self, 0, 1, &buf, 0);
	read_check(_metadata, self, 1, per, &buf, 0);
	read_check(_metadata, self, self->scratch - 1, 1, &buf, 0);
	for (i = 0; i < 64; i++) {
		lba = prng_below(&s, self->scratch - 2 * per);
		nlb = 1 + prng_below(&s, 2 * per);
		read_check(_metadata, self, lba, nlb, &buf, prng_below(&s, c->page) & ~(size_t)3);
	}
	nvme_dma_free(&buf);
	data_alloc(_metadata, self, &big, c->max_xfer + c->page, cached);
	read_check(_metadata, self, 5, c->max_xfer / c->lba_size, &big, c->page / 2);
}

TEST_F_TIMEOUT(nvme, reads_match_the_image, TIMEOUT)
{
	reads_match(_metadata, self, false);
}

TEST_F_TIMEOUT(nvme, cached_reads_match_the_image, TIMEOUT)
{
	reads_match(_metadata, self, true);
}

/* PRP1 alone, PRP1 + PRP2, PRP lists: lengths around page multiples, offsets moving the pages. */
TEST_F_TIMEOUT(nvme, prp_list_transfers, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	uint32_t max = c->max_xfer / c->lba_size, pb = c->page / c->lba_size;
	const size_t offs[] = { 0, 4, 512, c->page / 2, c->page - 4 };
	uint32_t lens[] = { 1, pb, pb + 1, 2 * pb, 2 * pb + 1, 3 * pb, max / 2, max - 1, max };
	struct nvme_dma buf;
	unsigned int i, j;

	/* Lists are only needed beyond two pages; MDTS must allow that. */
	ASSERT_LT(2 * c->page, c->max_xfer);
	data_alloc(_metadata, self, &buf, c->max_xfer + c->page, false);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		if (!lens[i] || lens[i] > max)
			continue;
		for (j = 0; j < ARRAY_SIZE(offs); j++)
			read_check(_metadata, self, 7 * i + j, lens[i], &buf, offs[j]);
	}
}

/* Writes to the scratch area read back; the blocks around stay as they were. */
static void writes_read_back(struct __test_metadata *_metadata, FIXTURE_DATA(nvme) *self,
			     bool cached)
{
	struct nvme_ctrl *c = &self->c;
	uint32_t max = c->max_xfer / c->lba_size, pb = c->page / c->lba_size;
	uint32_t lens[] = { 1, pb ? pb : 1, 2 * pb + 1, max };
	/* The cached test writes further on: the two may run on one image. */
	uint64_t lba = self->scratch + 1 + (cached ? 4 * max + 8 : 0), seed = now_ms();
	struct nvme_dma out, in, edges;
	size_t len, bs = c->lba_size;
	unsigned int i;

	data_alloc(_metadata, self, &out, c->max_xfer + c->page, cached);
	data_alloc(_metadata, self, &in, c->max_xfer, cached);
	/* The blocks either side: before the write, then after it. */
	data_alloc(_metadata, self, &edges, 4 * bs, cached);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		if (!lens[i] || lens[i] > max)
			continue;
		len = (size_t)lens[i] * bs;
		ASSERT_GE(c->nsze, lba + lens[i] + 1);
		ASSERT_EQ(0, synced_rw(c, false, lba - 1, 1, &edges, 0));
		ASSERT_EQ(0, synced_rw(c, false, lba + lens[i], 1, &edges, bs));

		/* Random data at a dword-aligned offset: the CPU takes the buffer, fills it. */
		ASSERT_EQ(0, nvme_dma_for_cpu(c, &out, NVME_DMA_TO_DEVICE));
		prng_fill((uint8_t *)out.cpu + 4 * i, len, seed + i);
		ASSERT_EQ(0, synced_rw(c, true, lba, lens[i], &out, 4 * i))
			TH_LOG("write of %u blocks at %llu: %s", lens[i], (unsigned long long)lba,
			       c->err);

		ASSERT_EQ(0, nvme_dma_for_cpu(c, &in, NVME_DMA_BIDIRECTIONAL));
		memset(in.cpu, 0xa5, in.len);
		ASSERT_EQ(0, synced_rw(c, false, lba, lens[i], &in, 0)) TH_LOG("%s", c->err);
		EXPECT_TRUE(prng_holds(in.cpu, len, seed + i))
			TH_LOG("%u blocks at LBA %llu did not read back", lens[i],
			       (unsigned long long)lba);
		ASSERT_EQ(0, synced_rw(c, false, lba - 1, 1, &edges, 2 * bs));
		ASSERT_EQ(0, synced_rw(c, false, lba + lens[i], 1, &edges, 3 * bs));
		EXPECT_EQ(0, memcmp(edges.cpu, (uint8_t *)edges.cpu + 2 * bs, 2 * bs))
			TH_LOG("a block next to the write changed");
		lba += lens[i] + 2;
	}
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
 * depth - 1 commands on every I/O queue before any reaping: single blocks, or (@lists) three-page
 * reads with PRP lists into a ring of shared slots, plugged: one doorbell, no reaping before it.
 */
static void fill_queues(struct __test_metadata *_metadata, FIXTURE_DATA(nvme) *self, bool lists)
{
	struct nvme_ctrl *c = &self->c;
	size_t bs = c->lba_size, slot = lists ? 3 * c->page : bs;
	unsigned int total = 0, done = 0, i, k, nslots, nlb = slot / bs;
	struct nvme_dma buf[NVME_MAX_IOQ];
	uint8_t *seen[NVME_MAX_IOQ];
	struct nvme_cpl cpl[64];
	struct nvme_queue *q;
	long long bad;
	int qi, n;

	for (qi = 0; qi < c->nr_ioq; qi++) {
		q = &c->ioq[qi];
		nslots = q->depth - 1 > (1u << 20) / slot ? (1u << 20) / slot : q->depth - 1;
		data_alloc(_metadata, self, &buf[qi], nslots * slot, false);
		seen[qi] = calloc(q->depth, 1);
		ASSERT_NE(NULL, seen[qi]);
		if (lists)
			nvme_plug(q);
		for (i = 0; i < q->depth - 1u; i++) {
			k = i % nslots;
			ASSERT_EQ(0, nvme_submit_rw(c, q, false, (qi * nslots + k) * nlb, nlb,
						    &buf[qi], k * slot, NULL))
				TH_LOG("command %u of %u: %s", i, q->depth - 1, c->err);
		}
		/* depth - 1 in flight is full: the SQ would wrap onto its head. */
		EXPECT_EQ(-EAGAIN, nvme_submit_rw(c, q, false, 0, 1, &buf[qi], 0, NULL));
		if (lists) {
			expect_failed(_metadata, -EINVAL, nvme_reap(c, q, cpl, 64), c, "plugged");
			nvme_unplug(q);
		}
		total += q->depth - 1;
	}
	for (qi = 0; qi < c->nr_ioq; qi++) {
		for (q = &c->ioq[qi]; q->inflight; done += n) {
			n = nvme_reap(c, q, cpl, 64);
			ASSERT_LT(0, n) TH_LOG("%d of %u done: %s", done, total, c->err);
			for (i = 0; i < (unsigned int)n; i++) {
				EXPECT_EQ(0, cpl[i].status);
				EXPECT_EQ(0, seen[qi][cpl[i].cid])
					TH_LOG("cid %u completed twice", cpl[i].cid);
				seen[qi][cpl[i].cid] = 1;
			}
		}
	}
	EXPECT_EQ(total, done);
	for (qi = 0; qi < c->nr_ioq; qi++) {
		/* Slot k read image bytes from (qi * nslots + k) * slot on: one run per queue. */
		bad = nvme_pattern_check(buf[qi].cpu, qi * buf[qi].len, buf[qi].len, self->seed);
		ASSERT_EQ(-1, bad) TH_LOG("queue %d: wrong data at byte %lld", qi, bad);
		nvme_dma_free(&buf[qi]);
		free(seen[qi]);
	}
	TH_LOG("%u commands of %zu bytes in flight on %d queue(s)", total, slot, c->nr_ioq);
}

TEST_F_TIMEOUT(nvme, full_queue_completes, TIMEOUT)
{
	fill_queues(_metadata, self, false);
	fill_queues(_metadata, self, true);
}

/*
 * Behind an IOMMU the controller gets IOVAs, never physical addresses; without, physical ones:
 * pages are found by contents in /proc/kcore, else in DMA-API debug's records (first page only).
 */
TEST_F_TIMEOUT(nvme, dma_addresses_follow_the_iommu, TIMEOUT)
{
	const char *iommu = getenv("UIOHEAP_IOMMU");
	struct nvme_ctrl *c = &self->c;
	struct nvme_dma data, *bufs[] = { &data, &c->admin.sq, &c->ioq[0].sq };
	unsigned int i, same = 0, pages = 0;
	long ps = sysconf(_SC_PAGESIZE);
	char type[16];
	enum page_is is;
	uint64_t phys;
	size_t off;
	int kcore;
	bool on;

	ASSERT_TRUE(iommu && (!strcmp(iommu, "on") || !strcmp(iommu, "off")))
		TH_LOG("UIOHEAP_IOMMU must say what the host asked for");
	on = !strcmp(iommu, "on");
	ASSERT_LT(0, heap_attr(self->uio, "iommu", type, sizeof(type)));
	EXPECT_TRUE(on ? !strcmp(type, "dma") || !strcmp(type, "dma-fq") : !strcmp(type, "none"))
		TH_LOG("IOMMU %s, but the heap says \"%s\"", iommu, type);
	kcore = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(kcore >= 0 || !access(DMA_API_DUMP, R_OK))
		TH_LOG("neither /proc/kcore nor %s: run as root", DMA_API_DUMP);

	data_alloc(_metadata, self, &data, c->max_xfer, false);
	read_check(_metadata, self, 3, c->max_xfer / c->lba_size, &data, 0);
	/* Queues: their first page, where the commands so far are. */
	for (i = 0; i < ARRAY_SIZE(bufs); i++) {
		for (off = 0; off < (i ? (size_t)ps : bufs[i]->len); off += ps) {
			pages++;
			if (kcore < 0) {
				phys = dma_debug_phys(self->pci, bufs[i]->addr);
				ASSERT_NE(0, phys) TH_LOG("%s: no mapping at %#llx", DMA_API_DUMP,
							  (unsigned long long)bufs[i]->addr);
				same += phys == bufs[i]->addr;
				break;
			}
			is = kcore_page(kcore, bufs[i]->addr + off, (uint8_t *)bufs[i]->cpu + off);
			ASSERT_NE(PAGE_UNKNOWN, is) TH_LOG("/proc/kcore unreadable");
			same += is == PAGE_AT_ADDR;
		}
	}
	TH_LOG("IOMMU %s: %u of %u pages physically at their DMA address (data %#llx, from %s)",
	       iommu, same, pages, (unsigned long long)data.addr,
	       kcore >= 0 ? "/proc/kcore" : DMA_API_DUMP);
	EXPECT_EQ(on ? 0 : pages, same);
}

/* Command errors come back decoded; the controller goes on working. */
TEST_F_TIMEOUT(nvme, command_errors_are_decoded, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_sqe cmd = { .opc = 0x06, .cdw10 = 0xff };	/* bad CNS */
	struct nvme_dma buf;

	data_alloc(_metadata, self, &buf, c->page, false);
	cmd.prp1 = buf.addr;
	expect_failed(_metadata, -EIO, nvme_rw(c, false, c->nsze, 1, &buf, 0), c,
		      "LBA Out of Range");
	EXPECT_EQ(0x080, c->status & 0x7ff);
	expect_failed(_metadata, -EIO, nvme_admin(c, &cmd, "Identify CNS 0xff", NULL), c,
		      "Invalid Field in Command");
	EXPECT_EQ(0x002, c->status & 0x7ff);
	read_check(_metadata, self, 0, 1, &buf, 0);
}

/* A command never fetched (bus mastering off) times out, CSTS said; nvme_open() recovers. */
TEST_F_TIMEOUT(nvme, timeout_is_reported, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_cpl cpl;
	struct nvme_dma buf;
	int cfg;

	data_alloc(_metadata, self, &buf, c->page, false);
	cfg = uio_pci_config_open(self->pci);
	ASSERT_LE(0, cfg);
	ASSERT_EQ(0, uio_pci_command(cfg, 0, PCI_COMMAND_MASTER));

	c->cmd_timeout_ms = 2000;
	ASSERT_EQ(0, nvme_submit_rw(c, &c->ioq[0], false, 0, 1, &buf, 0, NULL));
	expect_failed(_metadata, -ETIMEDOUT, nvme_reap(c, &c->ioq[0], &cpl, 1), c,
		      "no completion within 2000 ms");
	EXPECT_NE(NULL, strstr(c->err, "CSTS"));

	ASSERT_EQ(0, uio_pci_command(cfg, PCI_COMMAND_MASTER, 0));
	close(cfg);
	nvme_dma_free(&buf);
	/* Whatever state it is in now, closing is bounded, and open resets. */
	if (ctrl_close(self))
		TH_LOG("nvme_close: %s", c->err);
	reopen_and_read(_metadata, self);
}

/*
 * uio-nvme as a user runs it, once the fixture let go: identify, and a 4 MiB read to stdout
 * (several chunks of its buffer, from uioN and uioN-cached: -c) that must be the image.
 */
TEST_F_TIMEOUT(nvme, program_reads_the_image, TIMEOUT)
{
	static const char * const flags[] = { "", "-c " };
	size_t len = 4 << 20, got, n;
	char cmd[192], line[256];
	unsigned long long ios;
	bool serial = false;
	unsigned int i;
	uint8_t *data;
	FILE *f;

	ASSERT_EQ(0, access("./uio-nvme", X_OK)) TH_LOG("no ./uio-nvme in the payload");
	ASSERT_EQ(0, ctrl_close(self)) TH_LOG("nvme_close: %s", self->c.err);

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
			 flags[i], self->uio, len / self->c.lba_size);
		f = popen(cmd, "r");
		ASSERT_NE(NULL, f);
		for (got = 0; (n = fread(data + got, 1, len + 1 - got, f)) > 0; )
			got += n;
		EXPECT_EQ(0, pclose(f)) TH_LOG("%s", cmd);
		EXPECT_EQ(len, got) TH_LOG("%s", cmd);
		EXPECT_EQ(-1, nvme_pattern_check(data, 0, len, self->seed)) TH_LOG("%s", cmd);
		/* It says how many commands it ran: "uio-nvme: N I/O commands". */
		f = fopen("/tmp/uio-nvme.err", "re");
		ASSERT_NE(NULL, f);
		for (ios = 0; fgets(line, sizeof(line), f); )
			if (sscanf(line, "uio-nvme: %llu I/O commands", &ios) != 1)
				printf("# %s", line);
		fclose(f);
		EXPECT_LE(len / (self->c.max_xfer ? : len), ios);
		self->ios += ios;
	}
}

/* Not an NVMe controller, no UIO device, no heap: refused, and said why. */
TEST_F_TIMEOUT(nvme, bad_input_is_refused, TIMEOUT)
{
	const char *ko = getenv("UIOHEAP_KO"), *edus = getenv("UIOHEAP_EDU_UIO");
	struct nvme_ctrl other;
	char edu[16] = "";
	int ret;

	ASSERT_TRUE(edus && sscanf(edus, "%15s", edu) == 1)
		TH_LOG("UIOHEAP_EDU_UIO names no edu device");
	expect_failed(_metadata, -ENODEV, nvme_open(&other, edu, NULL), &other,
		      "is not an NVMe controller");
	expect_failed(_metadata, -ENODEV, nvme_open(&other, "uio999", NULL), &other,
		      "no such UIO device");

	/* No heap: unload uio_heap (nothing may hold it), then load it again. */
	ASSERT_TRUE(ko && *ko) TH_LOG("UIOHEAP_KO unset");
	ASSERT_EQ(0, ctrl_close(self)) TH_LOG("nvme_close: %s", self->c.err);
	ret = rmmod_nb("uio_heap");
	ASSERT_EQ(0, ret) TH_LOG("rmmod uio_heap: %s", strerror(ret));
	expect_failed(_metadata, -ENOENT, nvme_open(&other, self->uio, NULL), &other,
		      "is uio_heap loaded?");
	ret = insmod_file(ko);
	ASSERT_EQ(0, ret) TH_LOG("insmod %s: %s", ko, strerror(ret));
	reopen_and_read(_metadata, self);
}

/*
 * A freed buffer's IOVA leaves the IOTLB before its pages go back (lazy mode too): a read into it
 * faults, not writing what another device's heap took at once.  x86: intel-iommu's reports.
 */
TEST_F_TIMEOUT(nvme, freed_buffer_is_out_of_the_devices_reach, TIMEOUT)
{
	const uint32_t nlb = self->c.page / self->c.lba_size;
	char mode[16] = "", pci[32], edu[16];
	struct nvme_dma buf, stale;
	int kfd, ret, heap;
	unsigned char *p;

	ASSERT_LT(0, heap_attr(self->c.uio, "iommu", mode, sizeof(mode)));
	if (strncmp(mode, "dma", 3))
		SKIP(return, "no IOMMU: a freed buffer's address is physical");
#ifndef __x86_64__
	SKIP(return, "the verdict reads only intel-iommu's fault reports");
#endif
	ASSERT_EQ(0, edu_pci(false, pci, sizeof(pci)));
	ASSERT_EQ(0, uio_of_pci(pci, edu, sizeof(edu)));
	heap = open_heap(_metadata, edu);
	ASSERT_EQ(0, nvme_dma_alloc(&self->c, &buf, SZ_64K));
	ASSERT_EQ(0, nvme_rw(&self->c, false, 0, nlb, &buf, 0)) TH_LOG("%s", self->c.err);

	kfd = expect_fault_begin(self->pci);
	ASSERT_LE(0, kfd);
	stale = buf;
	nvme_dma_free(&buf);
	alloc_map(_metadata, heap, SZ_64K, &p);	/* held until the test exits */
	memset(p, 0x5a, SZ_64K);
	/* QEMU's controller may complete it anyway: the IOMMU is the judge. */
	ret = nvme_rw(&self->c, false, 0, nlb, &stale, 0);
	EXPECT_TRUE(!ret || ret == -EIO) TH_LOG("%s", self->c.err);
	EXPECT_TRUE(expect_fault_end(kfd, self->pci, 10000))
		TH_LOG("no IOMMU fault for the freed buffer's IOVA");
	EXPECT_TRUE(is_filled(p, SZ_64K, 0x5a)) TH_LOG("memory taken after the free was written");
}

/*
 * Unbinding the controller while the driver holds its buffers revokes them: mappings raise
 * SIGBUS, address queries fail, and the driver only resets the controller.  Rebound, it works.
 */
TEST_F_TIMEOUT(nvme, unbind_revokes_buffers, TIMEOUT)
{
	struct nvme_ctrl *c = &self->c;
	struct nvme_dma buf, *gone[] = { &buf, &c->admin.sq, &c->ioq[0].cq };
	unsigned char byte;
	unsigned int i;
	char node[64];
	uint64_t addr;

	data_alloc(_metadata, self, &buf, c->max_xfer, false);
	read_check(_metadata, self, 0, c->max_xfer / c->lba_size, &buf, 0);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	node_of(node, sizeof(node), self->uio);
	EXPECT_LE(0, wait_path(node, false, 1000));
	for (i = 0; i < ARRAY_SIZE(gone); i++) {
		EXPECT_EQ(SIGBUS, probe_read8(gone[i]->cpu, &byte)) TH_LOG("buffer %u", i);
		EXPECT_EQ(-ENODEV, uioheap_dma_addr(c->heap_fd, gone[i]->fd, &addr, NULL));
	}
	nvme_dma_free(&buf);
	/* The driver sees the revocation and does not touch the queues. */
	expect_failed(_metadata, -ENODEV, ctrl_close(self), c, "revoked");

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	reopen_and_read(_metadata, self);
}

TEST_HARNESS_MAIN
