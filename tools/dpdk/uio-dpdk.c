// SPDX-License-Identifier: GPL-2.0
/*
 * uio-dpdk: a DPDK application whose NIC descriptor rings and packet
 * buffers live in uio-heap memory, so that it is correct behind an IOMMU.
 *
 * DPDK on UIO programs the NIC with physical addresses from hugepages and
 * /proc/self/pagemap.  Here each port gets a buffer from its own NIC's heap
 * (/dev/dma_heap/uioN), added to DPDK as an external malloc heap with the
 * addresses uio-heap gave; the mbuf pool and both rings are placed on that
 * heap's socket, so every byte the NIC reads or writes carries an address
 * that is valid for it (an IOVA behind an IOMMU).
 *
 * Frames with a numbered payload go out of each port and must arrive,
 * intact, on the other.  Documentation/dpdk.rst explains it step by step.
 *
 *   uio-dpdk EAL-OPTIONS -- [--memory heap|native] [--heap-kib N]
 *            [--frames N] [--size BYTES] [--seconds S]
 *
 * Exit status: 0 every frame verified, 1 frames lost or corrupt, 2 usage,
 * 3 setup (no heap node, no NIC it can drive, too little heap memory).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "lib/pci.h"
#include "lib/uioheap.h"

#define NB_RXD		256
#define NB_TXD		256
#define NB_MBUFS	1023
#define BURST		32
/* Frames in flight per direction: fewer than the receiver's ring holds. */
#define WINDOW		128
#define ETHER_TYPE	0x88b5	/* IEEE 802 local experimental */
#define HEAP_PAGE	(2u << 20)	/* the external heap's page: a hugepage */

enum { EXIT_LOST = 1, EXIT_USAGE = 2, EXIT_SETUP = 3 };

/* Queue 0's descriptor ring base registers (BAR 0) of the PMDs accepted. */
static const struct nic_kind {
	const char *pmd;
	uint32_t rdbal, tdbal;
} nic_kinds[] = {
	{ "net_e1000_em", 0x02800, 0x03800 },
	{ "net_e1000_igb", 0x0c000, 0x0e000 },
};

struct port {
	uint16_t id;
	const struct nic_kind *kind;
	char bdf[RTE_DEV_NAME_MAX_LEN];
	char uio[32];
	int socket;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	/* heap memory: the buffer, its CPU mapping and its device address */
	int heap_fd, buf_fd;
	char *va;
	size_t len;
	uint64_t iova;
	/* traffic from this port */
	uint64_t sent, received, verified, corrupt, outside;
	uint32_t next_seq;
};

static struct {
	bool native;
	size_t heap_len;
	uint64_t frames;
	unsigned int size;
	double seconds;
} opt = { .heap_len = 4u << 20, .frames = 4096, .size = 1024 };

static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("uio-dpdk: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_SETUP);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: uio-dpdk EAL-OPTIONS -- [--memory heap|native] [--heap-kib N]\n"
		"                [--frames N] [--size BYTES] [--seconds S]\n"
		"  two ports a PMD drives, each bound to uio_pci_generic with a heap node\n"
		"  --memory   heap (default): rings and mbufs in /dev/dma_heap/uioN memory;\n"
		"             native: DPDK's own hugepages (physical addresses)\n"
		"  --heap-kib heap buffer per port, a multiple of 2048 (default 4096)\n"
		"  --frames   frames to send, half out of each port (default 4096)\n"
		"  --size     frame length in bytes, 60..1514 (default 1024)\n"
		"  --seconds  send for this long instead, out of port 0 (a benchmark)\n");
	exit(EXIT_USAGE);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "memory", required_argument, NULL, 'm' },
		{ "heap-kib", required_argument, NULL, 'k' },
		{ "frames", required_argument, NULL, 'f' },
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 'm':
			if (strcmp(optarg, "heap") && strcmp(optarg, "native"))
				usage();
			opt.native = !strcmp(optarg, "native");
			break;
		case 'k':
			opt.heap_len = strtoull(optarg, &end, 0) << 10;
			if (*end || !opt.heap_len || opt.heap_len % HEAP_PAGE)
				usage();
			break;
		case 'f':
			opt.frames = strtoull(optarg, &end, 0);
			if (*end || !opt.frames)
				usage();
			break;
		case 's':
			opt.size = strtoul(optarg, &end, 0);
			if (*end || opt.size < RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN ||
			    opt.size > RTE_ETHER_MAX_LEN - RTE_ETHER_CRC_LEN)
				usage();
			break;
		case 't':
			opt.seconds = strtod(optarg, &end);
			if (*end || opt.seconds <= 0)
				usage();
			break;
		default:
			usage();
		}
		if (errno)
			usage();
	}
	if (optind != argc)
		usage();
}

/*
 * A buffer of the port's own heap, mapped at an address aligned to the
 * external heap's page size (DPDK requires it), added to DPDK as a malloc
 * heap named after the node: the page table holds the buffer's device
 * addresses.  Returns the heap's socket id.
 */
static int port_heap_add(struct port *p)
{
	size_t n = p->len / HEAP_PAGE, i;
	rte_iova_t iovas[n];
	char *va;
	int ret;

	p->heap_fd = uioheap_open(p->uio);
	if (p->heap_fd < 0)
		die("port %u (%s): no heap node /dev/dma_heap/%s: %s (is uio_heap loaded?)",
		    p->id, p->bdf, p->uio, strerror(-p->heap_fd));
	p->buf_fd = uioheap_alloc(p->heap_fd, p->len, O_RDWR | O_CLOEXEC);
	if (p->buf_fd < 0)
		die("port %u: %s: cannot allocate %zu KiB: %s", p->id, p->uio, p->len >> 10,
		    strerror(-p->buf_fd));
	ret = uioheap_dma_addr(p->heap_fd, p->buf_fd, &p->iova, NULL);
	if (ret)
		die("port %u: %s: no device address: %s", p->id, p->uio, strerror(-ret));

	/* Reserve a page more than needed; the buffer goes on its aligned part. */
	va = mmap(NULL, p->len + HEAP_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		  -1, 0);
	if (va == MAP_FAILED)
		die("port %u: cannot reserve address space: %s", p->id, strerror(errno));
	p->va = (char *)RTE_ALIGN_CEIL((uintptr_t)va, HEAP_PAGE);
	if (p->va > va)
		munmap(va, p->va - va);
	munmap(p->va + p->len, va + HEAP_PAGE - p->va);
	if (mmap(p->va, p->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->buf_fd, 0) ==
	    MAP_FAILED)
		die("port %u: cannot map the %s buffer: %s", p->id, p->uio, strerror(errno));

	for (i = 0; i < n; i++)
		iovas[i] = p->iova + i * HEAP_PAGE;
	if (rte_malloc_heap_create(p->uio) ||
	    rte_malloc_heap_memory_add(p->uio, p->va, p->len, iovas, n, HEAP_PAGE))
		die("port %u: %s: DPDK refused the heap memory: %s", p->id, p->uio,
		    rte_strerror(rte_errno));
	return rte_malloc_heap_get_socket(p->uio);
}

static void port_heap_remove(struct port *p)
{
	if (rte_malloc_heap_memory_remove(p->uio, p->va, p->len) ||
	    rte_malloc_heap_destroy(p->uio))
		fprintf(stderr, "uio-dpdk: %s: heap still in use: %s\n", p->uio,
			rte_strerror(rte_errno));
	munmap(p->va, p->len);
	close(p->buf_fd);
	close(p->heap_fd);
}

static bool in_heap(const struct port *p, uint64_t addr)
{
	return addr >= p->iova && addr - p->iova < p->len;
}

/* Queue 0's ring bases as the NIC holds them, read from BAR 0. */
static void port_read_rings(const struct port *p, uint64_t *rx, uint64_t *tx)
{
	volatile uint8_t *bar;
	size_t len;
	int ret;

	ret = uio_pci_map_bar(p->bdf, 0, p->kind->tdbal + 8, &bar, &len);
	if (ret)
		die("port %u: cannot map BAR 0 of %s: %s", p->id, p->bdf, strerror(-ret));
	*rx = *(volatile uint32_t *)(bar + p->kind->rdbal) |
	      (uint64_t)*(volatile uint32_t *)(bar + p->kind->rdbal + 4) << 32;
	*tx = *(volatile uint32_t *)(bar + p->kind->tdbal) |
	      (uint64_t)*(volatile uint32_t *)(bar + p->kind->tdbal + 4) << 32;
	munmap((void *)bar, len);
}

/* Where the port's memory is; false if the NIC's rings are not in it. */
static bool port_report(const struct port *p)
{
	uint64_t rx, tx;

	port_read_rings(p, &rx, &tx);
	printf("uio-dpdk: port %u %s (%s", p->id, p->bdf, p->kind->pmd);
	if (opt.native) {
		printf(", %s): DPDK's memory, socket %d", p->uio, p->socket);
	} else {
		printf("): /dev/dma_heap/%s, %zu KiB at %#" PRIx64 " (physical %#" PRIx64
		       "), socket %d", p->uio, p->len >> 10, p->iova,
		       (uint64_t)rte_mem_virt2phy(p->va), p->socket);
	}
	printf("; rings at %#" PRIx64 " and %#" PRIx64 "\n", rx, tx);
	if (opt.native || (in_heap(p, rx) && in_heap(p, tx)))
		return true;
	fprintf(stderr, "uio-dpdk: port %u: the NIC's rings are not in its heap buffer\n", p->id);
	return false;
}

static void port_init(struct port *p, uint16_t id)
{
	struct rte_eth_conf conf = {};
	struct rte_eth_dev_info info;
	struct rte_eth_link link;
	char name[32];
	size_t i;
	int ret, tries;

	p->id = id;
	ret = rte_eth_dev_info_get(id, &info);
	if (ret)
		die("port %u: no device info: %s", id, rte_strerror(-ret));
	snprintf(p->bdf, sizeof(p->bdf), "%s", rte_dev_name(info.device));
	/*
	 * Only PMDs that take every DMA object from the socket given at queue
	 * setup: virtio and vmxnet3, for one, put rings on their own socket.
	 */
	for (i = 0; i < RTE_DIM(nic_kinds); i++)
		if (!strcmp(info.driver_name, nic_kinds[i].pmd))
			p->kind = &nic_kinds[i];
	if (!p->kind)
		die("port %u (%s): PMD %s does not place all its DMA memory on the queue's socket",
		    id, p->bdf, info.driver_name);
	if (uio_of_pci(p->bdf, p->uio, sizeof(p->uio)))
		die("port %u (%s): not bound to a UIO driver", id, p->bdf);

	if (opt.native) {
		p->socket = rte_eth_dev_socket_id(id);
		if (p->socket < 0)
			p->socket = (int)rte_socket_id();
	} else {
		p->len = opt.heap_len;
		p->socket = port_heap_add(p);
	}

	snprintf(name, sizeof(name), "mbufs-%u", id);
	p->pool = rte_pktmbuf_pool_create(name, NB_MBUFS, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					  p->socket);
	if (!p->pool)
		die("port %u: %s: no pool of %u mbufs: %s%s", id, opt.native ? "hugepages" : p->uio,
		    NB_MBUFS, rte_strerror(rte_errno),
		    opt.native ? "" : " (give each port more with --heap-kib)");
	ret = rte_eth_dev_configure(id, 1, 1, &conf);
	if (!ret)
		ret = rte_eth_rx_queue_setup(id, 0, NB_RXD, p->socket, NULL, p->pool);
	if (!ret)
		ret = rte_eth_tx_queue_setup(id, 0, NB_TXD, p->socket, NULL);
	if (ret == -ENOMEM)
		die("port %u: %s: no room for the rings (give each port more with --heap-kib)",
		    id, opt.native ? "hugepages" : p->uio);
	if (!ret)
		ret = rte_eth_dev_start(id);
	if (!ret)
		ret = rte_eth_macaddr_get(id, &p->mac);
	if (ret)
		die("port %u: cannot start it: %s", id, rte_strerror(-ret));
	/* QEMU's e1000 negotiates its link for half a second. */
	for (tries = 0; tries < 50; tries++) {
		if (!rte_eth_link_get_nowait(id, &link) && link.link_status)
			break;
		rte_delay_ms(100);
	}
	if (!link.link_status)
		die("port %u (%s): link down", id, p->bdf);
}

/* The payload of frame @seq from @port: a pattern no other frame has. */
static uint8_t pattern(uint16_t port, uint32_t seq, unsigned int i)
{
	return (uint8_t)(seq * 131 + i * 7 + port * 29);
}

struct frame_hdr {
	struct rte_ether_hdr eth;
	uint16_t port;
	uint32_t seq;
};

static unsigned int port_send(struct port *p, const struct port *to, unsigned int n)
{
	struct rte_mbuf *m[BURST];
	unsigned int i, j, sent;

	if (rte_pktmbuf_alloc_bulk(p->pool, m, n))
		return 0;
	for (i = 0; i < n; i++) {
		struct frame_hdr *h = rte_pktmbuf_mtod(m[i], struct frame_hdr *);
		uint8_t *d = (uint8_t *)(h + 1);

		h->eth.dst_addr = to->mac;
		h->eth.src_addr = p->mac;
		h->eth.ether_type = rte_cpu_to_be_16(ETHER_TYPE);
		h->port = p->id;
		h->seq = p->next_seq + i;
		for (j = 0; j < opt.size - sizeof(*h); j++)
			d[j] = pattern(p->id, h->seq, j);
		m[i]->data_len = m[i]->pkt_len = opt.size;
		if (!opt.native && !in_heap(p, rte_mbuf_data_iova(m[i])))
			p->outside++;
	}
	sent = rte_eth_tx_burst(p->id, 0, m, n);
	rte_pktmbuf_free_bulk(m + sent, n - sent);
	p->next_seq += sent;
	p->sent += sent;
	return sent;
}

/* Receives on @p what @from sent, checking every byte. */
static void port_receive(struct port *p, struct port *from)
{
	struct rte_mbuf *m[BURST];
	unsigned int i, j, n;

	n = rte_eth_rx_burst(p->id, 0, m, BURST);
	for (i = 0; i < n; i++) {
		const struct frame_hdr *h = rte_pktmbuf_mtod(m[i], const struct frame_hdr *);
		const uint8_t *d = (const uint8_t *)(h + 1);
		bool ok = m[i]->pkt_len == opt.size && h->port == from->id &&
			  h->eth.ether_type == rte_cpu_to_be_16(ETHER_TYPE) &&
			  h->seq < from->next_seq;

		for (j = 0; ok && j < opt.size - sizeof(*h); j++)
			ok = d[j] == pattern(from->id, h->seq, j);
		from->received++;
		if (ok)
			from->verified++;
		else
			from->corrupt++;
		if (!opt.native && !in_heap(p, rte_mbuf_data_iova(m[i])))
			p->outside++;
	}
	rte_pktmbuf_free_bulk(m, n);
}

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Frames out of each port in turn, at most WINDOW of them in flight per
 * direction, until all were sent and have arrived, or two seconds pass
 * without one arriving.  With --seconds, out of port 0 only, for that long.
 * The rate is timed from the first arrival: QEMU's e1000 holds the first
 * frames while it negotiates its link.
 */
static void run_traffic(struct port *ports)
{
	uint64_t quota[2] = { (opt.frames + 1) / 2, opt.frames / 2 }, last = 0, first = 0;
	double start = now(CLOCK_MONOTONIC), idle_since = start, t, t0 = 0, cpu0 = 0;
	unsigned int k;

	if (opt.seconds) {
		quota[0] = UINT64_MAX;
		quota[1] = 0;
	}
	for (;;) {
		for (k = 0; k < 2; k++) {
			struct port *p = &ports[k];
			uint64_t room = WINDOW - (p->sent - p->received);

			room = RTE_MIN(room, quota[k] - p->sent);
			if (room)
				port_send(p, &ports[!k], RTE_MIN(room, (uint64_t)BURST));
			port_receive(&ports[!k], p);
		}
		t = now(CLOCK_MONOTONIC);
		if (ports[0].received + ports[1].received != last) {
			last = ports[0].received + ports[1].received;
			idle_since = t;
			if (!first) {
				first = last;
				t0 = t;
				cpu0 = now(CLOCK_PROCESS_CPUTIME_ID);
			}
		}
		/* Time is up: what was sent must still arrive. */
		if (opt.seconds && t - start >= opt.seconds)
			quota[0] = ports[0].sent;
		if (ports[0].received == quota[0] && ports[1].received == quota[1])
			break;
		if (t - idle_since > 2.0)
			break;
	}
	t = now(CLOCK_MONOTONIC) - t0;
	cpu0 = now(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
	last -= first;
	printf("uio-dpdk: first frame after %.3f s, then %" PRIu64 " frames in %.3f s: ",
	       first ? t0 - start : 0.0, last, first ? t : 0.0);
	printf("%.0f frames/s, %.0f ns of CPU per frame\n", first ? last / t : 0.0,
	       last ? cpu0 * 1e9 / last : 0.0);
}

int main(int argc, char **argv)
{
	struct port ports[2] = {};
	uint64_t sent = 0, received = 0, verified = 0, corrupt = 0, outside = 0;
	uint16_t id, n = 0;
	int ret;
	bool bad = false;

	/* Whoever watches the output sees each line as it happens. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		die("EAL: %s", rte_strerror(rte_errno));
	parse_args(argc - ret, argv + ret);

	RTE_ETH_FOREACH_DEV(id) {
		if (n == 2)
			die("more than two ports: allow two with -a");
		port_init(&ports[n++], id);
	}
	if (n < 2)
		die("%u port(s): two NICs a DPDK PMD drives must be bound to %s", n,
		    "uio_pci_generic and allowed with -a");

	for (id = 0; id < 2; id++)
		bad |= !port_report(&ports[id]);

	run_traffic(ports);

	for (id = 0; id < 2; id++) {
		struct port *p = &ports[id];

		rte_eth_dev_stop(p->id);
		rte_eth_dev_close(p->id);
		sent += p->sent;
		received += p->received;
		verified += p->verified;
		corrupt += p->corrupt;
		outside += p->outside;
	}
	for (id = 0; id < 2; id++) {
		rte_mempool_free(ports[id].pool);
		if (!opt.native)
			port_heap_remove(&ports[id]);
	}
	printf("uio-dpdk: memory=%s sent=%" PRIu64 " received=%" PRIu64 " verified=%" PRIu64
	       " lost=%" PRIu64 " corrupt=%" PRIu64 " outside_heap=%" PRIu64 "\n",
	       opt.native ? "native" : "heap", sent, received, verified, sent - received,
	       corrupt, outside);
	rte_eal_cleanup();
	if (outside)
		fprintf(stderr, "uio-dpdk: %" PRIu64 " mbufs outside the heap buffers\n", outside);
	return bad || outside || !sent || verified != sent ? EXIT_LOST : 0;
}
