// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap: look at the uio-heap nodes of this machine, and hold a buffer
 * of one of them.  Everything shown comes from /sys/class/uio_heap/.
 *
 *   uio-heap [--json] list
 *   uio-heap [--json] info NODE
 *   uio-heap [--json] alloc NODE SIZE
 *
 * Exit codes (also in uio-heap(1)): 0 done, 1 failed, 2 usage,
 * 3 module not loaded, 4 no such node, 5 permission denied.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/uioheap.h"

#define SYSFS_CLASS	"/sys/class/uio_heap"

enum {
	EXIT_USAGE = 2,
	EXIT_NO_MODULE = 3,
	EXIT_NO_NODE = 4,
	EXIT_PERM = 5,
};

enum kind { TEXT, NUMBER, FLAG };

/* What is known about a node: its name, links and sysfs attributes. */
static const struct field {
	const char *key;	/* JSON key, info label, sysfs attribute */
	const char *head;	/* list column, NULL: only in info and JSON */
	int width;
	enum kind kind;
} fields[] = {
	{ "node",		"NODE",		12, TEXT },
	{ "uio",		"UIO",		7, TEXT },
	{ "parent",		"PARENT",	13, TEXT },
	{ "driver",		"DRIVER",	16, TEXT },
	{ "iommu",		"IOMMU",	9, TEXT },
	{ "revoke",		NULL,		0, TEXT },
	{ "coherent",		"COHERENT",	9, FLAG },
	{ "dma_mask_bits",	"MASK",		5, NUMBER },
	{ "buffers",		"BUFFERS",	8, NUMBER },
	{ "allocated_bytes",	"ALLOCATED",	11, NUMBER },
	{ "imports",		"IMPORTS",	8, NUMBER },
	{ "imported_bytes",	"IMPORTED",	11, NUMBER },
	{ "max_bytes",		"LIMIT",	0, NUMBER },
};

#define NR_FIELDS	(sizeof(fields) / sizeof(fields[0]))

/* One node's values, in the order of fields[]; "" when unknown. */
struct node {
	char val[NR_FIELDS][64];
};

static bool json;

static int fail(int code, const char *fmt, const char *arg, int err)
{
	fprintf(stderr, "uio-heap: ");
	fprintf(stderr, fmt, arg);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	return code;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: uio-heap [--json] list\n"
		"       uio-heap [--json] info NODE\n"
		"       uio-heap [--json] alloc NODE SIZE[K|M|G]\n"
		"NODE is uioN or uioN-cached (a /dev/dma_heap/ path is fine too).\n");
	return EXIT_USAGE;
}

/* Why a node is not there: the module is missing, or just the node. */
static int no_node(const char *name)
{
	if (access(SYSFS_CLASS, F_OK))
		return fail(EXIT_NO_MODULE,
			    "the uio_heap module is not loaded (no %s)",
			    SYSFS_CLASS, 0);
	return fail(EXIT_NO_NODE, "no heap node %s (see uio-heap list)",
		    name, 0);
}

/* The first line of a sysfs attribute, without its newline. */
static void read_attr(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, size, f))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The name a sysfs link points at: its target's last component. */
static void read_link(const char *path, char *buf, size_t size)
{
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);

	buf[0] = '\0';
	if (n <= 0)
		return;
	target[n] = '\0';
	snprintf(buf, size, "%s", strrchr(target, '/') + 1);
}

static void node_read(const char *name, struct node *node)
{
	char path[PATH_MAX];
	const char *key;
	size_t i, size;
	char *val;

	for (i = 0; i < NR_FIELDS; i++) {
		key = fields[i].key;
		val = node->val[i];
		size = sizeof(node->val[i]);
		if (!strcmp(key, "node")) {
			snprintf(val, size, "%s", name);
		} else if (!strcmp(key, "uio")) {
			snprintf(val, size, "%.*s", (int)strcspn(name, "-"), name);
		} else if (!strcmp(key, "parent")) {
			snprintf(path, sizeof(path), SYSFS_CLASS "/%s/device", name);
			read_link(path, val, size);
		} else if (!strcmp(key, "driver")) {
			snprintf(path, sizeof(path), SYSFS_CLASS "/%s/device/driver",
				 name);
			read_link(path, val, size);
		} else {
			snprintf(path, sizeof(path), SYSFS_CLASS "/%s/%s", name, key);
			read_attr(path, val, size);
		}
	}
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s >= ' ')
			putchar(*s);
	}
	putchar('"');
}

static void json_value(const struct field *f, const char *val)
{
	if (!*val)
		printf("null");
	else if (f->kind == FLAG)
		printf("%s", strcmp(val, "0") ? "true" : "false");
	else if (f->kind == NUMBER)
		printf("%s", val);
	else
		json_string(val);
}

static void node_json(const struct node *node)
{
	size_t i;

	printf("{");
	for (i = 0; i < NR_FIELDS; i++) {
		printf("%s\"%s\": ", i ? ", " : "", fields[i].key);
		json_value(&fields[i], node->val[i]);
	}
	printf("}");
}

/* How a value reads in the list and info: "-" unknown, "none" no limit. */
static const char *shown(const struct field *f, const char *val)
{
	if (!*val)
		return "-";
	if (f->kind == FLAG)
		return strcmp(val, "0") ? "yes" : "no";
	if (!strcmp(f->key, "max_bytes") && !strcmp(val, "0"))
		return "none";
	return val;
}

static void list_row(const struct node *node)
{
	size_t i;

	for (i = 0; i < NR_FIELDS; i++)
		if (fields[i].head)
			printf("%s%-*s", i ? " " : "", fields[i].width,
			       node ? shown(&fields[i], node->val[i]) :
			       fields[i].head);
	printf("\n");
}

static int skip_dots(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int cmd_list(void)
{
	struct dirent **names;
	struct node node;
	int n, i;

	n = scandir(SYSFS_CLASS, &names, skip_dots, versionsort);
	if (n < 0) {
		if (errno == ENOENT)
			return no_node("");
		return fail(1, "reading %s", SYSFS_CLASS, errno);
	}
	if (json)
		printf("[");
	else
		list_row(NULL);
	for (i = 0; i < n; i++) {
		node_read(names[i]->d_name, &node);
		if (json) {
			printf(i ? ",\n " : "");
			node_json(&node);
		} else {
			list_row(&node);
		}
		free(names[i]);
	}
	free(names);
	if (json)
		printf("]\n");
	return 0;
}

/* "uio0", "uio0-cached" or "/dev/dma_heap/uio0": the node's name. */
static const char *node_name(const char *arg)
{
	const char *slash = strrchr(arg, '/');

	return slash ? slash + 1 : arg;
}

static int node_check(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), SYSFS_CLASS "/%s", name);
	if (!*name || strchr(name, '.') || access(path, F_OK))
		return no_node(name);
	return 0;
}

static int cmd_info(const char *arg)
{
	const char *name = node_name(arg);
	struct node node;
	size_t i;
	int ret;

	ret = node_check(name);
	if (ret)
		return ret;
	node_read(name, &node);
	if (json) {
		node_json(&node);
		printf("\n");
		return 0;
	}
	printf("%-16s /dev/dma_heap/%s\n", "device:", name);
	for (i = 0; i < NR_FIELDS; i++)
		printf("%s:%*s%s\n", fields[i].key,
		       (int)(16 - strlen(fields[i].key)), "",
		       shown(&fields[i], node.val[i]));
	return 0;
}

/* "4096", "64K", "2M", "1G": bytes, 0 if it makes no sense. */
static unsigned long long parse_size(const char *s)
{
	const char *units = "KMG", *unit;
	unsigned long long n;
	unsigned int shift;
	char *end;

	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return 0;
	unit = *end ? strchr(units, toupper(*end)) : NULL;
	if (unit) {
		shift = 10 * (unit - units + 1);
		if (n > ULLONG_MAX >> shift)
			return 0;
		n <<= shift;
		end++;
	}
	return *end ? 0 : n;
}

static int open_error(const char *name, int err)
{
	if (err == ENOENT || err == ENODEV)
		return no_node(name);
	if (err == EACCES || err == EPERM)
		return fail(EXIT_PERM,
			    "/dev/dma_heap/%s: permission denied (root, or a group the node admits: see uio-heap(4))",
			    name, 0);
	return fail(1, "opening /dev/dma_heap/%s", name, err);
}

static int cmd_alloc(const char *arg, const char *size_arg)
{
	const char *name = node_name(arg);
	unsigned long long size = parse_size(size_arg);
	enum uioheap_addr_source source;
	uint64_t addr;
	sigset_t stop;
	int heap, buf, sig, ret;
	off_t len;

	if (!size)
		return fail(EXIT_USAGE, "bad size '%s'", size_arg, 0);
	heap = uioheap_open(name);
	if (heap < 0)
		return open_error(name, -heap);
	buf = uioheap_alloc(heap, size, O_RDWR | O_CLOEXEC);
	if (buf < 0)
		return fail(1, "allocating from %s", name, -buf);
	len = lseek(buf, 0, SEEK_END);
	ret = uioheap_dma_addr(heap, buf, &addr, &source);
	if (ret == -EPERM)
		return fail(EXIT_PERM,
			    "%s: the address is physical (no IOMMU): asking for it needs CAP_SYS_RAWIO",
			    name, 0);
	if (ret)
		return fail(1, "asking for the DMA address on %s", name, -ret);

	/* Blocked before printing: a script may signal as soon as it reads. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	if (json) {
		printf("{\"node\": ");
		json_string(name);
		printf(", \"size\": %lld, \"dma_addr\": \"%#llx\", ", (long long)len,
		       (unsigned long long)addr);
		printf("\"source\": \"%s\", \"pid\": %d}\n",
		       source == UIOHEAP_ADDR_DMA_BUF ? "dma-buf" : "heap",
		       (int)getpid());
	} else {
		printf("%s: %lld bytes at DMA address %#llx; held until interrupted (pid %d)\n",
		       name, (long long)len, (unsigned long long)addr,
		       (int)getpid());
	}
	fflush(stdout);
	sigwait(&stop, &sig);
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	if (i < argc && !strcmp(argv[i], "--json")) {
		json = true;
		i++;
	}
	if (i >= argc)
		return usage();
	if (!strcmp(argv[i], "list") && argc == i + 1)
		return cmd_list();
	if (!strcmp(argv[i], "info") && argc == i + 2)
		return cmd_info(argv[i + 1]);
	if (!strcmp(argv[i], "alloc") && argc == i + 3)
		return cmd_alloc(argv[i + 1], argv[i + 2]);
	return usage();
}
