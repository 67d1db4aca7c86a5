# SPDX-License-Identifier: GPL-2.0
#
# uio-heap: build the modules for a kernel, and run the project's checks.
#
#   make                     modules for the running kernel
#   make KDIR=<build dir>    modules for another kernel
#   make check               everything CI runs (unit, static and VM suites)
#   make check-long          the same, with the robustness battery at full length
#   make mutate              mutation check: each mutant of tests/mutants must end make check red
#   make demo                boot a kernel in QEMU and drive a device's DMA
#   make bench               buffer-cost benchmark in QEMU
#   make deb                 Debian packages, in build/deb (or $UIOHEAP_OUT/deb)

KDIR ?= /lib/modules/$(shell uname -r)/build
SRC := $(CURDIR)
CONFTEST_H := drivers/uio_heap/conftest.h
CONFTEST_STAMP := drivers/uio_heap/.conftest.kdir

all: modules

# The probes run again whenever KDIR changes, or a probe does.
$(CONFTEST_H): scripts/conftest.sh $(wildcard drivers/uio_heap/conftest/*) FORCE
	@if [ ! -f $@ ] || [ "$$(cat $(CONFTEST_STAMP) 2>/dev/null)" != "$(realpath $(KDIR))" ] || \
	    [ -n "$$(find scripts/conftest.sh drivers/uio_heap/conftest -newer $@ 2>/dev/null)" ]; then \
		echo "  CONFTEST $(KDIR)"; \
		sh scripts/conftest.sh $(KDIR) drivers/uio_heap/conftest $@ && \
		echo "$(realpath $(KDIR))" > $(CONFTEST_STAMP); \
	fi

modules: $(CONFTEST_H)
	$(MAKE) -C $(KDIR) M=$(SRC) modules

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(SRC) modules_install

clean:
	$(MAKE) -C $(KDIR) M=$(SRC) clean 2>/dev/null || true
	rm -f $(CONFTEST_H) $(CONFTEST_STAMP)

check:
	tests/check.sh

# The robustness battery at full length (make check runs short forms).
check-long:
	UIOHEAP_LONG=1 tests/check.sh

mutate:
	tests/mutate.sh

demo:
	tests/demo.sh

bench:
	tests/bench.sh

deb:
	scripts/deb.sh

.PHONY: all modules modules_install clean check check-long mutate demo bench deb FORCE
