#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# usage: report.sh DIR
#
# Turns the "@ ..." lines of DIR/raw-{host,off,on,mttcg,nvme,nvme-off,dpdk,dpdk-on}.txt (written by
# tests/bench.sh) into DIR/results.txt (printed too) and DIR/cycle.png.
set -euo pipefail

dir=${1:?usage: report.sh DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
raws=()
for r in host off on mttcg nvme nvme-off dpdk dpdk-on; do
	[ -f "$dir/raw-$r.txt" ] && raws+=("$dir/raw-$r.txt")
done
[ ${#raws[@]} -gt 0 ] || { echo "report.sh: no raw-*.txt in $dir" >&2; exit 1; }

# The plot's data: size, then median p10 p90 (us) per method; the IOMMU-on
# run adds its uio line.
awk '
FNR == 1 { run = FILENAME; sub(/.*raw-/, "", run); sub(/\.txt$/, "", run) }
$1 == "@" && $2 == "cycle" && (run == "off" || (run == "on" && $3 == "uio")) {
	m = run == "on" ? "uio,IOMMU-on(2nd-VM-run)" : $3
	if (!(m in seen)) { seen[m] = 1; order[++nm] = m }
	if (!($4 in sz)) { sz[$4] = 1; sizes[++ns] = $4 }
	v[m, $4] = sprintf("%.3f %.3f %.3f", $8 / 1e3, $7 / 1e3, $9 / 1e3)
}
END {
	if (!nm) exit
	line = "# size"
	for (i = 1; i <= nm; i++) line = line " " order[i]
	print line
	for (j = 1; j <= ns; j++) {
		line = sizes[j]
		for (i = 1; i <= nm; i++) {
			cell = "NaN NaN NaN"
			if ((order[i], sizes[j]) in v) cell = v[order[i], sizes[j]]
			line = line " " cell
		}
		print line
	}
}' "${raws[@]}" >"$dir/cycle.dat"

awk -f "$here/report.awk" "${raws[@]}" >"$dir/results.txt"
cat "$dir/results.txt"

if [ -s "$dir/cycle.dat" ] && command -v gnuplot >/dev/null; then
	titles=$(head -n 1 "$dir/cycle.dat" | cut -d' ' -f3-)
	kernel=$(sed -n 's/^@ info kernel //p' "$dir/raw-off.txt" 2>/dev/null | head -n 1)
	gnuplot -e "datafile='$dir/cycle.dat'; outfile='$dir/cycle.png'; titles='$titles'; kernel='$kernel'" \
		"$here/cycle.gp" || echo "report.sh: gnuplot failed" >&2
fi
