# checks.sh - what the command-line tests share (sourced, not run):
#   check DESC COND          counts COND (0 or 1, already evaluated); prints DESC on 0
#   expect_exit WANT DESC CMD...   runs CMD, keeps its output in $out, checks its status
#   has TEXT                 1 if $out holds TEXT, else 0
#   checks_done              prints the counts; its status: 0 if nothing failed
fails=0; passes=0
check() {
  if [ "$2" = 1 ]; then passes=$((passes+1)); else echo "FAIL: $1"; fails=$((fails+1)); fi
}
expect_exit() {
  local want=$1 desc=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  check "$desc (exit $rc, want $want): $out" "$([ $rc = "$want" ] && echo 1 || echo 0)"
}
has() { grep -q -- "$1" <<<"$out" && echo 1 || echo 0; }
checks_done() {
  echo "$passes passed, $fails failed"
  [ "$fails" = 0 ]
}
