#!/usr/bin/env bash
# `tensile plan` and the policy registry as a user meets them: --help lists
# every policy and its options; --policy picks one by name (an unknown name
# exits 2 listing the known ones); a policy's options are given as
# --OPTION VALUE (an unknown option, a bad value or a per-job list of the
# wrong length exits 2 naming the policy, the option and the value); the
# TENSILE options of old (--max-swap-rate, --swap-in-slack, --no-recompute)
# keep working; the baselines (vdnn-conv, vdnn-all, autoswap) plan through
# the same interface, and `tensile run` takes any policy and its options;
# any number of jobs plans (40 here), zero is refused; the channels shared
# on one time axis or in equal shares, the simulated phases, channels and
# compute are chosen by name, said in the report and carried by the JSON (a
# share per job), and bad values exit 2.
set -uo pipefail
bin=${1:?usage: test_plan_cli.sh TENSILE}
. "$(dirname "$0")/cli/checks.sh"

expect_exit 0 "plan --help" "$bin" plan --help
help_out=$out
plan_help_has() { case "$help_out" in *"$1"*) echo 1 ;; *) echo 0 ;; esac; }
for w in "vanilla " "tensile " "--max-swap-rate X\[,X...\]" "--swap-in-slack X" "--recompute B" "--max-iterations N" \
         "--channel-share S" "--phases P" "--channels C" "--compute C"; do
  check "plan --help lists '$w'" "$(has "$w")"
done

expect_exit 2 "an unknown policy" "$bin" plan --model mlp --policy tensil
check "the message lists the known policies: $out" "$(has "unknown policy 'tensil' (known: vanilla, tensile")"
expect_exit 2 "an option the policy lacks" "$bin" plan --model mlp --policy vanilla --swap-in-slack 0.1
check "the message names the policy and the option: $out" "$(has "policy 'vanilla' has no option 'swap-in-slack'")"
expect_exit 2 "an unknown option" "$bin" plan --model mlp --swap-in-slak 0.1
check "the message lists the policy's options: $out" "$(has "its options: max-swap-rate, swap-in-slack, min-swap-bytes, recompute, prefetch, max-iterations, fit")"
expect_exit 2 "a bad value" "$bin" plan --model mlp --swap-in-slack fast
check "the message names the value: $out" "$(has "option swap-in-slack: 'fast' is not a number")"
expect_exit 2 "a value out of range" "$bin" plan --model mlp --max-swap-rate 1.5
check "the message names the range: $out" "$(has "max_swap_rate = 1.5 outside \[0, 1\]")"
expect_exit 2 "a per-job list of the wrong length" "$bin" plan --jobs mlp:2,mlp:4 --max-swap-rate 0.5,1,1
check "the message counts values and jobs: $out" "$(has "max_swap_rate has 3 values for 2 jobs")"
expect_exit 2 "no job" "$bin" plan --jobs ""
check "the message names --jobs: $out" "$(has "--jobs: '' names no job")"

# the options of old, and an option given before --policy
expect_exit 0 "TENSILE's options" "$bin" plan --jobs mlp:2,mlp:4 --max-swap-rate 0.5,1 --swap-in-slack 0.25 --no-recompute --json
expect_exit 0 "--OPTION before --policy" "$bin" plan --model mlp --recompute off --policy tensile --max-iterations 3 --json
check "policy in the JSON: $out" "$(python3 -c "import json,sys; print(1 if json.loads(sys.argv[1])['policy']=='tensile' and json.loads(sys.argv[1])['planner_iterations']<=3 else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "vanilla" "$bin" plan --model mlp --policy vanilla --json
check "vanilla plans nothing: $out" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if d['policy']=='vanilla' and all(j['swaps']==0 and j['planned_peak_bytes']==j['vanilla_peak_bytes'] for j in d['jobs']) else 0)" "$out" 2>/dev/null || echo 0)"

# the baselines of issue 11: vDNN (no options) and AutoSwap (its options), in
# plan and in run
for w in "vdnn-conv " "vdnn-all " "autoswap " "--size-threshold X" "--score N" "--evaluations N" "--seed N"; do
  check "plan --help lists '$w'" "$(plan_help_has "$w")"
done
for p in vdnn-conv vdnn-all; do
  expect_exit 0 "$p" "$bin" plan --model cnn --batch 4 --policy $p --json
  check "$p swaps and verifies: ${out:0:160}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if d['policy']=='$p' and d['jobs'][0]['swaps']>0 else 0)" "$out" 2>/dev/null || echo 0)"
done
expect_exit 0 "autoswap at the device's memory: no pressure" "$bin" plan --model cnn --batch 4 --policy autoswap --json
check "autoswap swaps nothing then: ${out:0:160}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if d['jobs'][0]['swaps']==0 else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "autoswap under a budget" "$bin" plan --model resnet18 --batch 8 --policy autoswap --size-threshold 0 --evaluations 6 --budget 300MiB --json
check "autoswap swaps then: ${out:0:160}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if d['jobs'][0]['swaps']>0 and d['planner_iterations']==6 else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 2 "an autoswap option out of range" "$bin" plan --model cnn --policy autoswap --score 5
check "the message names the option and the range: $out" "$(has "option score: score = 5 outside \[0, 4\]")"
expect_exit 2 "vDNN has no options" "$bin" plan --model cnn --policy vdnn-all --seed 1
check "the message says so: $out" "$(has "policy 'vdnn-all' has no option 'seed' (its options: none)")"
expect_exit 2 "run: a policy's bad option" "$bin" run --model cnn --policy autoswap --evaluations 0
check "the message names the option: $out" "$(has "option evaluations: evaluations = 0 outside \[1, 1000\]")"
expect_exit 2 "run: an option the policy lacks" "$bin" run --model cnn --policy vanilla --swap-in-slack 0.1
check "the message names the policy: $out" "$(has "policy 'vanilla' has no option 'swap-in-slack'")"

# Capuchin (its options; no pressure without a budget) and DTR, in plan and
# in run (Capuchin's first iteration in passive mode)
for w in "capuchin " "dtr " "--swap B" "--min-bytes X"; do
  check "plan --help lists '$w'" "$(plan_help_has "$w")"
done
expect_exit 0 "capuchin at the device's memory: no pressure" "$bin" plan --model cnn --batch 4 --policy capuchin --json
check "capuchin plans nothing then: ${out:0:160}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if d['jobs'][0]['swaps']==0 and d['jobs'][0]['recomputes']==0 else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "capuchin under a budget" "$bin" plan --model resnet18 --batch 16 --policy capuchin --budget 391MiB --json
check "capuchin meets it: ${out:0:200}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); j=d['jobs'][0]; print(1 if j['swaps']>0 and j['budget_met'] else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "dtr under a budget" "$bin" plan --model densenet121 --batch 16 --policy dtr --budget 1700MiB --json
check "dtr recomputes, never swaps, meets it: ${out:0:200}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); j=d['jobs'][0]; print(1 if j['recomputes']>0 and j['swaps']==0 and j['budget_met'] else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 2 "a capuchin option out of range" "$bin" plan --model cnn --policy capuchin --min-bytes -2
check "the message names the option: $out" "$(has "option min-bytes")"
expect_exit 2 "capuchin plans after its passive iteration: no plan-sized device" "$bin" run --model cnn --policy capuchin --device-memory plan
json=$("$bin" run --model cnn --batch 64 --iterations 3 --device-memory 70% --policy capuchin --min-bytes 0 --threads 2 --json --quiet 2>/dev/null); rc=$?
check "run capuchin in 70% exits 0 (rc $rc)" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "capuchin's passive first iteration evicts, its plan follows, results identical: ${json:0:300}" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1]); s=d['scheduled']; pa=s['passive_iteration']
print(1 if pa['iter_ms']>0 and pa['evictions']>0 and s['swaps']>0 and d['identical'] else 0)" "$json" 2>/dev/null || echo 0)"
json=$("$bin" run --model resnet18 --batch 8 --dataset synthetic --image-size 32 --iterations 2 --device-memory 95% --policy dtr --threads 2 --json --quiet 2>/dev/null); rc=$?
check "run dtr in 95% exits 0 (rc $rc)" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "dtr runs online: drops and regenerates, no planned swap nor recomputation, results identical: ${json:0:300}" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1]); s=d['scheduled']
print(1 if s['drops']>0 and s['remats']>0 and s['recomputes']==0 and s['swaps']==0 and d['identical'] else 0)" "$json" 2>/dev/null || echo 0)"

# channel shares and phases
expect_exit 0 "equal shares, random phases, fair channels" "$bin" plan --jobs mlp:2,cnn:4,mlp:8 --channel-share equal --phases random:5 --channels fair --json
check "a share per job, the settings, no stall: ${out:0:300}" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1]); j=d['jobs']
print(1 if d['channel_share']=='equal' and d['phases']=='random:5' and d['channels']=='fair' and d['compute']=='shared'
      and all(abs(x['channel_share']-1/3)<1e-12 and x['stall_total_us']==0 and 0<=x['offset_us'] for x in j)
      and any(x['offset_us']>0 for x in j) else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "the defaults" "$bin" plan --jobs mlp:2,mlp:4 --json
check "the shared time axis, phases 0, FIFO: ${out:0:300}" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1])
print(1 if d['channel_share']=='shared' and d['phases']=='0' and d['channels']=='fifo' and d['compute']=='shared'
      and all(x['channel_share'] is None and x['offset_us']==0 for x in d['jobs']) else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "the report says how" "$bin" plan --jobs mlp:2,mlp:4 --channel-share equal --phases random --compute per-job
check "the report names the settings: $out" "$(has "plans on equal shares of the channels (--channel-share equal); simulated with phases random:1")"
check "... and the compute: $out" "$(has "a compute resource per job")"
expect_exit 2 "a bad seed" "$bin" plan --model mlp --phases random:x
check "the message names the value: $out" "$(has "--phases: 'random:x' is not 0, random or random:SEED")"
expect_exit 2 "a bad channel model" "$bin" plan --model mlp --channels slow
check "the message names the value: $out" "$(has "slow")"
expect_exit 2 "a bad share" "$bin" plan --model mlp --channel-share half
check "the message names the value: $out" "$(has "half")"

# TENSILE planning to a budget: a budget below the floor (the largest working set one op
# needs) is said to be; the floor is in the JSON; --fit 0 is the paper's plan
expect_exit 3 "tensile below the floor" "$bin" plan --model cnn --batch 8 --budget 1KiB
check "the report names the floor: $out" "$(has "is below the floor of")"
expect_exit 3 "tensile below the floor, JSON" "$bin" plan --model cnn --batch 8 --budget 1KiB --json
check "the JSON has the floor: ${out:0:200}" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1][sys.argv[1].index('{'):])
print(1 if d['global']['floor_bytes'] > 1024 and d['jobs'][0]['floor_bytes'] == d['global']['floor_bytes'] else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "tensile --fit 0" "$bin" plan --model cnn --batch 8 --fit 0 --json

# the integer programs and STR's greedy (unet at batch 8 under a budget: swaps)
expect_exit 3 "checkmate reports its solver" "$bin" plan --model cnn --batch 8 --policy checkmate --budget 1MiB --json
check "checkmate: the solver in the JSON, budget unmet, least memory: ${out:0:200}" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1][sys.argv[1].index('{'):]); s=d['solver']
print(1 if d['policy']=='checkmate' and s['status']=='optimal' and s['budget_relaxed'] and not d['global']['budget_met'] else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 3 "the same in words" "$bin" plan --model cnn --batch 8 --policy checkmate --budget 1MiB
check "the report names CBC and the least memory: $out" "$(has "integer program: CBC optimal")"
expect_exit 0 "str under a budget" "$bin" plan --model unet --batch 8 --policy str --budget 1800MiB --json
check "str swaps, no solver: ${out:0:200}" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1]); print(1 if d['jobs'][0]['swaps']>0 and 'solver' not in d else 0)" "$out" 2>/dev/null || echo 0)"
expect_exit 0 "mosos at a time limit" "$bin" plan --model unet --batch 8 --policy mosos --budget 1800MiB --time-limit 0.01
check "the report says the limit was hit: $out" "$(has "stopped at the time limit")"
expect_exit 2 "mosos: a bad time limit" "$bin" plan --model cnn --policy mosos --time-limit 0
check "the message names the option: $out" "$(has "option time-limit")"
expect_exit 1 "mosos: several jobs on the shared channels" "$bin" plan --jobs mlp:2,mlp:4 --policy mosos --budget 1MiB
check "the message says to use channel shares: $out" "$(has "channel shares")"

# 40 jobs at once
jobs=$(python3 -c "print(','.join('mlp:%d' % (2 + i % 3) for i in range(40)))")
expect_exit 0 "40 jobs" "$bin" plan --jobs "$jobs" --json
check "40 jobs in the JSON: ${out:0:200}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if len(d['jobs'])==40 and all('planned_waits' in j for j in d['jobs']) else 0)" "$out" 2>/dev/null || echo 0)"

checks_done
