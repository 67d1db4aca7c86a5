#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make mutate: do the tests guard what the documentation promises?  Each
# mutant of tests/mutants breaks one promise; it is applied alone to a
# copy of the tree, and the narrowest make check that covers it (its VMs,
# its suites, its tests, UIOHEAP_QUICK) must end red.  One line per mutant, then a
# summary; exit status 1 if a mutant survived, has no test yet, no longer
# applies or could not be checked.  Documentation/mutation.rst has the
# promise -> test -> mutant table and the last result.
#
#   tests/mutate.sh [--dry-run] [--list] [NAME-GLOB...]
#
#   NAME-GLOB, UIOHEAP_MUTANTS="GLOB..."  only the mutants that match
#   --dry-run, UIOHEAP_MUTATE_DRY=1       no VM: apply each mutant and build
#                   the module for the host's 6.12 kernel, about 15 s a
#                   mutant: a stale or broken list fails before any VM
#   --list          name, VMs, suites and killing tests of each mutant
#   UIOHEAP_MUTATE_JOBS   mutants checked side by side, each in its own
#                   tree with its own module and one VM at a time
#                   (default: one per CPU; 1 with --dry-run)
#   UIOHEAP_MUTATE_KEEP=1 keep each mutant's tree and build output
#
# Everything goes to $UIOHEAP_OUT/mutate (build/mutate): per mutant its
# diff, check.log, TAP files and VM logs, and results.txt for the run.
set -euo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# ${text/"$from"/"$to"} must not treat & in C code as the match (bash 5.2).
shopt -u patsub_replacement 2>/dev/null || true

dry=${UIOHEAP_MUTATE_DRY:-} listonly='' pats=()
for a in "$@"; do
	case $a in
	--dry-run) dry=1 ;;
	--list) listonly=1 ;;
	-*) die "unknown option $a (see the head of $0)" ;;
	*) pats+=("$a") ;;
	esac
done
[ ${#pats[@]} -gt 0 ] || read -ra pats <<<"${UIOHEAP_MUTANTS:-}"
list=$top/tests/mutants
work=$out/mutate

# ---- The list: one block per mutant, see the head of tests/mutants ----

names=() files=() froms=() tos=() tests=() vmss=() suites=()
n=-1 lineno=0
while IFS= read -r line || [ -n "$line" ]; do
	lineno=$((lineno + 1))
	case $line in '' | '#'*) continue ;; esac
	key=${line%%:*} val=${line#*:}
	[ "$key" != "$line" ] || die "$list:$lineno: not KEY: VALUE"
	case $key in
	from | to) val=${val# } ;;
	*) val=${val#"${val%%[![:space:]]*}"} val=${val%"${val##*[![:space:]]}"} ;;
	esac
	if [ "$key" = name ]; then
		n=$((n + 1)) names[n]=$val
		continue
	fi
	[ $n -ge 0 ] || die "$list:$lineno: $key: before the first name:"
	case $key in
	promise | note) ;;
	file) files[n]=$val ;;
	from) froms[n]=${froms[n]+${froms[n]}$'\n'}$val ;;
	to) tos[n]=${tos[n]+${tos[n]}$'\n'}$val ;;
	test) tests[n]=${tests[n]:+${tests[n]}$'\n'}$val ;;
	vms) vmss[n]=$val ;;
	suites) suites[n]=$val ;;
	*) die "$list:$lineno: unknown key $key" ;;
	esac
done <"$list"

declare -A seen=()
for ((i = 0; i <= n; i++)); do
	m=${names[i]}
	[[ $m =~ ^[A-Za-z0-9._-]+$ ]] || die "$list: bad name '$m'"
	[ -z "${seen[$m]:-}" ] || die "$list: $m twice"
	seen[$m]=1
	[ -n "${files[i]:-}" ] || die "$list: $m: no file:"
	[ -n "${froms[i]:-}" ] || die "$list: $m: no from:"
	[ -n "${tests[i]:-}" ] || die "$list: $m: no test: (none if nothing can see it yet)"
	[ "${tests[i]}" = none ] && continue
	! grep -qx none <<<"${tests[i]}" || die "$list: $m: test: none, and a test"
	if [ -z "${vmss[i]:-}" ] || [ -z "${suites[i]:-}" ]; then
		die "$list: $m: no vms: or suites:"
	fi
	for v in ${vmss[i]}; do
		case $v in
		x86-6.1-off | x86-6.1-on | x86-6.12-off | x86-6.12-on | debug-off | debug-on | \
			arm64-off | arm64-on | arm64nc | zcu102) ;;
		*) die "$list: $m: unknown VM kind $v" ;;
		esac
	done
done

sel=()
for ((i = 0; i <= n; i++)); do
	[ ${#pats[@]} = 0 ] && { sel+=("$i"); continue; }
	for p in "${pats[@]}"; do
		# shellcheck disable=SC2053
		if [[ ${names[i]} == $p ]]; then sel+=("$i"); break; fi
	done
done
for p in "${pats[@]}"; do
	hit=
	# shellcheck disable=SC2053
	for i in "${sel[@]}"; do [[ ${names[i]} == $p ]] && hit=1; done
	[ -n "$hit" ] || die "no mutant matches $p"
done

if [ -n "$listonly" ]; then
	for i in "${sel[@]}"; do
		printf '%-40s %-12s %-18s %s\n' "${names[i]}" "${vmss[i]:--}" "${suites[i]:--}" \
			"${tests[i]//$'\n'/; }"
	done
	exit 0
fi

# ---- One mutant ----

# The release's files (git's tracked and untracked ones, not build/),
# with their times: make then sees the seeded userspace as up to date.
# Taken once, into $snap: every mutant starts from the same sources.
copy_tree() {
	mkdir -p "$1"
	source_files | while IFS= read -r f; do
		if [ -f "$top/$f" ]; then printf '%s\0' "$f"; fi
	done | tar -C "$top" --null -T - -cf - | tar -C "$1" -xf -
}

# apply I TREE: replaces the mutant's one from text in TREE; else says why.
apply() {
	local f=$2/${files[$1]} from=${froms[$1]} to=${tos[$1]-} text rest count
	[ -f "$f" ] || { echo "no ${files[$1]}"; return 1; }
	IFS= read -r -d '' text <"$f" || true
	rest=${text//"$from"/}
	count=$(((${#text} - ${#rest}) / ${#from}))
	[ "$count" = 1 ] || { echo "from: occurs $count times in ${files[$1]}"; return 1; }
	printf '%s' "${text/"$from"/"$to"}" >"$f"
	rest=${text%%"$from"*} && rest=${rest//[!$'\n']/}
	echo "${files[$1]##*/}:$((${#rest} + 1))"
	diff -u --label "a/${files[$1]}" --label "b/${files[$1]}" "$snap/${files[$1]}" "$f" \
		>"$work/${names[$1]}/mutant.diff" || true
}

mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# result I STATUS SECONDS DETAIL: the mutant's line, kept for the summary.
result() {
	printf '%s\t%s\t%s\n' "$2" "$3" "$4" >"$work/${names[$1]}/result"
	printf '%-9s %-40s %7s  %s\n' "$2" "${names[$1]}" "$(mmss "$3")" "$4"
}

# The make check variables for the mutant's VMs, in envs.  x86 kernels
# and modes combine: x86-6.12-on with x86-6.1-off boots four VMs.
uniq_words() { printf '%s\n' "$@" | awk 'NF && !s[$0]++' | paste -sd ' '; }
vm_env() {
	local v s k='' m='' d='' a='' t name
	for v in ${vmss[$1]}; do
		case $v in
		x86-*) s=${v#x86-} k="$k ${s%-*}.*" m="$m ${v##*-}" ;;
		debug-*) d="$d ${v#debug-}" ;;
		arm64nc) a="$a nc" ;;
		zcu102) a="$a zcu102" ;;
		arm64-*) a="$a ${v#arm64-}" ;;
		esac
	done
	# shellcheck disable=SC2086
	k=$(uniq_words $k) m=$(uniq_words $m) d=$(uniq_words $d) a=$(uniq_words $a)
	envs=(UIOHEAP_QUICK=1 "UIOHEAP_OUT=$work/${names[$1]}/out" "UIOHEAP_SUITES=${suites[$1]}"
	      "UIOHEAP_KERNELS=${k:-none}" "UIOHEAP_IOMMU_MODES=${m:-off}"
	      "UIOHEAP_ARM64_MODES=${a:-none}")
	if [ -n "$d" ]; then
		envs+=("UIOHEAP_DEBUG_IOMMU_MODES=$d")
	else
		envs+=(UIOHEAP_NO_DEBUG_KERNEL=1)
	fi
	[ "$jobs" -gt 1 ] && envs+=(UIOHEAP_JOBS=1)
	# Only the killing tests of kselftest suites, unless the host's
	# verdict is one: the kernel log needs the whole suites.
	grep -q '^verdict ' <<<"${tests[$1]}" && return 0
	t=$(while read -r s name; do
		[[ $s == uio_heap_* || $s == kunit ]] || continue
		awk -v s="$s" -v t="$name" '$1 == s && $2 == t { print t }' "$snap/tests/expected-tests"
	done <<<"${tests[$1]}" | paste -sd ' ')
	[ -z "$t" ] || envs+=("UIOHEAP_TESTS=$t")
	return 0
}

# The first "not ok" of a VM that has one of the mutant's test texts.
killed_by() {
	local t f hit
	while IFS= read -r t; do
		for f in "$2"/*.tap; do
			[ -f "$f" ] || continue
			hit=$(grep -E '^[[:space:]]*not ok [0-9]+ ' "$f" | grep -F -m 1 -- "${t#* }" || true)
			[ -z "$hit" ] || { echo "$(basename "$f" .tap): ${t#* }"; return 0; }
		done
	done <<<"${tests[$1]}"
	return 1
}

check_one() {
	local i=$1 d=$work/${names[$1]} start=$SECONDS rc=0 msg how t
	rm -rf "$d" && mkdir -p "$d"
	cp -a "$snap" "$d/tree"
	if ! msg=$(apply "$i" "$d/tree"); then
		result "$i" STALE 0 "$msg"
		return 0
	fi
	if [ "${tests[i]}" = none ]; then
		result "$i" "NO TEST" 0 "no test can see it yet"
		rm -rf "$d/tree"
		return 0
	fi
	vm_env "$i"
	mkdir -p "$d/out"
	cp -a "$seed/user" "$d/out/"
	[[ " ${vmss[i]} " != *" arm64"* ]] || cp -a "$seed/user-arm64" "$d/out/"
	env -u UIOHEAP_LONG -u UIOHEAP_KMODS -u UIOHEAP_EXPECTATIONS -u UIOHEAP_JOBS \
		-u UIOHEAP_KERNELS -u UIOHEAP_IOMMU_MODES -u UIOHEAP_DEBUG_IOMMU_MODES \
		-u UIOHEAP_NO_DEBUG_KERNEL -u UIOHEAP_ARM64_MODES -u UIOHEAP_TESTS "${envs[@]}" \
		"$d/tree/tests/check.sh" </dev/null >"$d/check.log" 2>&1 || rc=$?
	t=$((SECONDS - start))
	if ! compgen -G "$d/out/tap/*.tap" >/dev/null; then
		result "$i" ERROR "$t" "no VM ran (exit status $rc): $(tail -n 1 "$d/check.log")"
	elif [ "$rc" = 0 ]; then
		result "$i" SURVIVED "$t" "green: ${vmss[i]}, ${suites[i]}"
	elif how=$(killed_by "$i" "$d/out/tap"); then
		result "$i" killed "$t" "$how"
	else
		# Red, but not where the list says: a flaky VM, or a wrong list.
		how=$(cat "$d/out/tap/"*.tap | grep -m 1 -E '^[[:space:]]*not ok ' || true)
		result "$i" red "$t" "not by its test; first: ${how#"${how%%[![:space:]]*}"}"
	fi
	if [ -z "${UIOHEAP_MUTATE_KEEP:-}" ]; then
		rm -rf "$d/tree"
		find "$d/out" -mindepth 1 -maxdepth 1 ! -name tap ! -name summary.txt \
			! -name 'vm-*.out' ! -name 'vm-*.kmsg' ! -name 'vm-*.log' ! -name 'vm-*.qemu' \
			-exec rm -rf {} +
	fi
}

# Dry run: applies, and builds against the 6.12 headers (the probes'
# conftest.h comes from the unmutated build: it does not change).
dry_one() {
	local i=$1 d=$work/${names[$1]} start=$SECONDS msg w at
	rm -rf "$d" && mkdir -p "$d"
	cp -a "$snap" "$d/tree"
	if ! at=$(apply "$i" "$d/tree"); then
		result "$i" STALE 0 "$at"
		return 0
	fi
	cp -p "$work/.base/drivers/uio_heap/conftest.h" "$work/.base/drivers/uio_heap/.conftest.kdir" \
		"$d/tree/drivers/uio_heap/"
	if msg=$(nice -n 19 make -s -C "$d/tree" KDIR="$kdir" 2>&1) &&
	   [ -f "$d/tree/drivers/uio_heap/uio_heap.ko" ]; then
		w=$(grep -v 'Skipping BTF generation' <<<"$msg" | grep -ci warning || true)
		msg=$at
		[ "$w" = 0 ] || msg="$msg, $w warnings"
		[ "${tests[i]}" != none ] || msg="$msg, no test yet"
		result "$i" builds $((SECONDS - start)) "$msg"
	else
		result "$i" BROKEN $((SECONDS - start)) "$(grep -m 2 -iE 'error|no rule' <<<"$msg" | paste -sd ' ')"
	fi
	[ -n "${UIOHEAP_MUTATE_KEEP:-}" ] || rm -rf "$d/tree"
}

# ---- The run ----

start=$SECONDS
commit=$(git -c safe.directory='*' -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
mkdir -p "$work"
snap=$work/.src
rm -rf "$snap"
copy_tree "$snap"
if [ -n "$dry" ]; then
	jobs=${UIOHEAP_MUTATE_JOBS:-1}
	kdir=$(compgen -G '/lib/modules/6.12.*/build' | head -n 1) || true
	[ -n "$kdir" ] || die "no /lib/modules/6.12.*/build"
	log "dry run at $commit: ${#sel[@]} mutants applied and built against $kdir"
	rm -rf "$work/.base"
	cp -a "$snap" "$work/.base"
	msg=$(nice -n 19 make -s -C "$work/.base" KDIR="$kdir" 2>&1) ||
		die "the unmutated tree does not build: $msg"
else
	jobs=${UIOHEAP_MUTATE_JOBS:-$(nproc)}
	"$top/tests/deps.sh"
	log "mutation check at $commit: ${#sel[@]} mutants, $jobs at a time, in $work"
	# Userspace does not change with a mutant: built once, copied to each.
	seed=$work/.user
	ksrc=$(ksrc_dir)
	top=$snap build_user "$seed/user" "$ksrc/tools/testing/selftests"
	for i in "${sel[@]}"; do
		[[ " ${vmss[i]:-} " != *" arm64"* ]] && continue
		top=$snap build_user "$seed/user-arm64" "$ksrc/tools/testing/selftests" \
			CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar
		break
	done
fi

run_one() { if [ -n "$dry" ]; then dry_one "$1"; else check_one "$1"; fi; }

trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
for i in "${sel[@]}"; do
	rm -f "$work/${names[i]}/result"
	if [ "$jobs" -gt 1 ]; then
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
		run_one "$i" &
	else
		run_one "$i"
	fi
done
wait

declare -A count=()
bad=0
: >"$work/results.txt"
for i in "${sel[@]}"; do
	r=$work/${names[i]}/result
	if [ -f "$r" ]; then
		IFS=$'\t' read -r status t detail <"$r"
	else
		status=ERROR t=0 detail="no result"
	fi
	count[$status]=$((${count[$status]:-0} + 1))
	case $status in killed | red | builds) ;; *) bad=1 ;; esac
	printf '%s\t%s\t%s\t%s\n' "${names[i]}" "$status" "$t" "$detail" >>"$work/results.txt"
done
sum=
for s in killed red builds SURVIVED "NO TEST" STALE BROKEN ERROR; do
	[ -n "${count[$s]:-}" ] && sum="$sum, ${count[$s]} ${s,,}"
done
echo "# mutate at $commit, $(date -u +%Y-%m-%d): ${#sel[@]} mutants: ${sum#, } in $(mmss $((SECONDS - start)))" |
	tee -a "$work/results.txt"
[ -z "${count[red]:-}" ] || echo "# red: killed, but not by the test the list names (see its check.log)"
exit $bad
