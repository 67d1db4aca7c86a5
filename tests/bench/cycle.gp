# SPDX-License-Identifier: GPL-2.0
#
# Cycle cost against buffer size, one line per method, log-log:
#   gnuplot -e "datafile='cycle.dat'; outfile='cycle.png'; titles='uio system ...'; kernel='...'" cycle.gp
# datafile: size in bytes, then median p10 p90 in microseconds per method.

if (!exists("kernel")) kernel = ''
set terminal pngcairo size 960,640 font ",10" noenhanced
set output outfile
set title sprintf("uio-heap: one buffer cycle (alloc, mmap, touch every page, address, munmap, close)\nkernel %s in QEMU TCG: emulated, compare the lines, not the times with hardware", kernel)
set logscale xy
set xlabel "buffer size"
set ylabel "time per cycle, microseconds (median, bars p10..p90)"
set xtics ("4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576, "4M" 4194304, "16M" 16777216, "64M" 67108864)
set grid xtics ytics mytics
set key top left
set datafile missing "NaN"
set offsets graph 0.03, graph 0.03, 0, 0
plot for [i=1:words(titles)] datafile using 1:(column(3*i-1)):(column(3*i)):(column(3*i+1)) \
	with yerrorlines lw 2 pt i title word(titles, i)
