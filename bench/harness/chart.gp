# Renders bench/results/latest.svg from the data files fairlock_bench writes.
#   gnuplot -e "datadir='DIR/'; outfile='latest.svg'; subtitle='...'" bench/harness/chart.gp
if (!exists("datadir")) datadir = "./"
if (!exists("outfile")) outfile = "latest.svg"
if (!exists("subtitle")) subtitle = ""

if (strlen(outfile) > 4 && outfile[strlen(outfile)-2:] eq "png") {
  set terminal pngcairo size 1500,900 enhanced font "Helvetica,10" background rgb "white"
} else {
  set terminal svg size 1500,900 dynamic enhanced font "Helvetica,12" background rgb "white"
}
set output outfile
set encoding utf8
set datafile missing "nan"
f(name) = datadir . name

c_fair = "#1b7837"
c_unfair = "#b2182b"
c_unfair2 = "#ef8a62"
c_zset = "#2166ac"
c_grey = "#888888"

set multiplot layout 2,3 title "fairlock benchmark: fair FIFO lock vs. the usual alternatives, one run, ratios to its RTT reference (PING across vCPUs)\n{/*0.8 ".subtitle."}"
set grid ytics lc rgb "#dddddd"
set key top left font ",10" samplen 2

# 1. Uncontended acquire+release, x RTT
set title "A. Uncontended acquire+release (× RTT; dashed: target 2.3)"
set style fill solid 0.8 noborder
set boxwidth 0.6
set yrange [0:*]
set xtics font ",10" rotate by -20
unset key
set arrow 1 from graph 0, first 2.3 to graph 1, first 2.3 nohead dt 2 lc rgb c_grey
plot f("a.dat") using 0:2:xtic(1) with boxes lc rgb c_fair, \
     "" using 0:2:(sprintf("%.2f", $2)) with labels offset 0,0.7 font ",9"
unset arrow 1
set xtics norotate font ",12"

# 2. Throughput vs W
set title "B. Grants per second vs. participants W (one lock)"
set logscale x 2
set logscale y
set yrange [*:*]
set xrange [3:300]
set xlabel "W"
set xtics (4, 16, 64, 256)
set key bottom left
plot f("b_fair.dat") using 1:2 with linespoints lw 2 pt 7 lc rgb c_fair title "fairlock", \
     f("b_unfair.dat") using 1:2 with linespoints lw 2 pt 5 lc rgb c_unfair title "unfair SET NX (all grants)", \
     f("b_unfair.dat") using 1:3 with linespoints lw 2 pt 4 dt 2 lc rgb c_unfair2 title "unfair: grants to another participant", \
     f("b_zset.dat") using 1:2 with linespoints lw 2 pt 9 lc rgb c_zset title "sorted-set polling queue"

# 3. Handoff latency vs W
set title "B. Handoff latency × RTT (dashed: targets 2 and 10)"
set key top left
set arrow 2 from graph 0, first 2 to graph 1, first 2 nohead dt 2 lc rgb c_grey
set arrow 3 from graph 0, first 10 to graph 1, first 10 nohead dt 2 lc rgb c_grey
plot f("b_fair.dat") using 1:3 with linespoints lw 2 pt 7 lc rgb c_fair title "fairlock p50", \
     f("b_fair.dat") using 1:4 with linespoints lw 2 pt 6 dt 2 lc rgb c_fair title "fairlock p99", \
     f("b_unfair.dat") using 1:4 with linespoints lw 2 pt 5 lc rgb c_unfair title "unfair p50 (≤ 0 not drawn)", \
     f("b_unfair.dat") using 1:5 with linespoints lw 2 pt 4 dt 2 lc rgb c_unfair title "unfair p99"
unset arrow 2
unset arrow 3

# 4. Wait times vs W
set title "B. Wait for the lock: p99 and max (ms)"
set key bottom right
plot f("b_fair.dat") using 1:5 with linespoints lw 2 pt 7 lc rgb c_fair title "fairlock p99", \
     f("b_fair.dat") using 1:6 with linespoints lw 2 pt 6 dt 2 lc rgb c_fair title "fairlock max", \
     f("b_unfair.dat") using 1:6 with linespoints lw 2 pt 5 lc rgb c_unfair title "unfair p99", \
     f("b_unfair.dat") using 1:7 with linespoints lw 2 pt 4 dt 2 lc rgb c_unfair title "unfair max", \
     f("b_zset.dat") using 1:3 with linespoints lw 2 pt 9 lc rgb c_zset title "sorted-set queue p99"
unset logscale x
unset xlabel
set xtics auto
set xrange [*:*]

# 5. Wake transports
set title "G. Wake transport at W = 16: handoff × RTT"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 noborder
set boxwidth 0.9
set key top left
set yrange [0.1:*]
plot f("g.dat") using 2:xtic(1) lc rgb c_fair title "p50", \
     "" using 3 lc rgb c_zset title "p99"
unset style data

# 6. One long queue
set title "D. One queue: server time per script call vs. queued waiters"
set logscale x 10
unset logscale y
set yrange [0:*]
set xrange [5:200000]
set xlabel "queued waiters"
set ylabel "µs per call"
set y2label "bytes per waiter"
set y2tics
set y2range [0:*]
set key bottom right
plot f("d.dat") using 1:2 with linespoints lw 2 pt 7 lc rgb c_fair title "acquire (joins the tail)", \
     f("d.dat") using 1:3 with linespoints lw 2 pt 5 lc rgb c_zset title "release (hands to the head)", \
     f("d.dat") using 1:4 axes x1y2 with linespoints lw 2 pt 4 dt 2 lc rgb c_grey title "bytes/waiter (right)"

unset multiplot
