#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The robustness figures of a run: sums the "# summary: key=value ..."
# lines the suites and the guest payload print, per VM (one TAP file each)
# and over all of them, and prints them as a table of comment lines:
#
#   summary.sh FILE.tap...
#
# A key a VM did not report shows as "-" (a suite skipped, a kernel
# without kmemleak), never as 0.  Always exits 0: the TAP results decide.
set -euo pipefail

awk '
FNR == 1 {
	name = FILENAME
	sub(/.*\//, "", name); sub(/\.tap$/, "", name)
	sub(/\+deb[0-9]+/, "", name); sub(/-amd64/, "", name); sub(/-iommu-/, "/", name)
}
/# summary: / {
	if (!(name in listed)) { listed[name] = 1; vm[++nvm] = name }
	s = $0
	sub(/.*# summary: /, "", s)
	n = split(s, kv, /[ \t]+/)
	for (i = 1; i <= n; i++) {
		if (split(kv[i], p, "=") != 2 || p[2] !~ /^[0-9]+$/)
			continue
		if (!(p[1] in known)) { known[p[1]] = 1; key[++nkey] = p[1] }
		val[name, p[1]] += p[2]; has[name, p[1]] = 1
		tot[p[1]] += p[2]
	}
}
END {
	if (!nkey) exit
	w = 8
	for (v = 1; v <= nvm; v++) if (length(vm[v]) > w) w = length(vm[v])
	printf "# robustness summary (sums of the suites\047 summary lines)\n"
	printf "# %-20s", "figure"
	for (v = 1; v <= nvm; v++) printf " %*s", w, vm[v]
	printf " %*s\n", w, "all"
	for (k = 1; k <= nkey; k++) {
		printf "# %-20s", key[k]
		for (v = 1; v <= nvm; v++)
			printf " %*s", w, has[vm[v], key[k]] ? val[vm[v], key[k]] : "-"
		printf " %*s\n", w, tot[key[k]]
	}
}' "$@"
