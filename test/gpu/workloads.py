"""Known GPU workloads (each its own process) while the node agent runs; scrapes its /metrics
and compares each process's figures over its busy window with the truth.

usage: workloads.py OUT_DIR METRICS_URL
"""
import re, subprocess, sys, threading, time, urllib.request

OUT, URL = sys.argv[1], sys.argv[2]
CHILD = r'''
import sys, time, torch
gib, duty, secs, kind = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
buf = torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda"); buf.fill_(1)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
torch.cuda.synchronize(); t0 = time.time(); print(f"START {t0:.3f}", flush=True)
while time.time() - t0 < secs:
    p0 = time.time()
    while time.time() - p0 < duty:
        if kind == "full":
            for _ in range(8): a @ b
        else:
            torch.cuda._sleep(20_000_000)
        torch.cuda.synchronize()
    rest = 1.0 - (time.time() - p0)
    if rest > 0: time.sleep(rest)
print(f"END {time.time():.3f}", flush=True)
'''
# tag, GiB, duty, seconds, kind; a group runs at once
PHASES = [[("A_16GiB_25pct_full", 16, 0.25, 16, "full")],
          [("C_32GiB_onethread", 32, 1.0, 12, "one")],
          [("E1_8GiB_20pct_full", 8, 0.20, 20, "full"), ("E2_40GiB_50pct_full", 40, 0.50, 20, "full")]]
LINE = re.compile(r'^(gpuvpa_container_gpu_(?:memory_used_bytes|busy_ratio|sm_active_ratio))\{([^}]*)\} (\S+)')
scrapes, stop = [], threading.Event()

def scraper():
    while not stop.is_set():
        t = time.time()
        try:
            text = urllib.request.urlopen(URL, timeout=2).read().decode()
            open(f"{OUT}/last-metrics.txt", "w").write(text)
            for line in text.splitlines():
                m = LINE.match(line)
                if m:
                    labels = dict(kv.split("=", 1) for kv in m.group(2).split(","))
                    scrapes.append((t, m.group(1), labels.get("pid", "").strip('"'),
                                    labels.get("method", "").strip('"'), float(m.group(3))))
        except Exception as e:
            print("scrape:", e, flush=True)
        time.sleep(max(0, 0.5 - (time.time() - t)))

th = threading.Thread(target=scraper, daemon=True); th.start()
time.sleep(3)
phases = []
for group in PHASES:
    procs = [(tag, gib, duty, kind, subprocess.Popen([sys.executable, "-c", CHILD, str(gib), str(duty), str(secs), kind],
              stdout=subprocess.PIPE, text=True)) for tag, gib, duty, secs, kind in group]
    for tag, gib, duty, kind, p in procs:
        out, _ = p.communicate(timeout=120)
        marks = dict(l.split() for l in out.splitlines() if l.startswith(("START", "END")))
        phases.append((tag, p.pid, gib, duty, kind, float(marks.get("START", 0)), float(marks.get("END", 0))))
time.sleep(2); stop.set(); th.join()
with open(f"{OUT}/phases.csv", "w") as f:
    f.write("tag,pid,gib,duty,kind,busy_start,busy_end\n")
    for p in phases: f.write(",".join(map(str, p)) + "\n")
with open(f"{OUT}/scrapes.csv", "w") as f:
    f.write("t,metric,pid,method,value\n")
    for s in scrapes: f.write(",".join(map(str, s)) + "\n")
with open(f"{OUT}/compare.txt", "w") as f:
    for tag, pid, gib, duty, kind, t0, t1 in phases:
        row = {}
        for metric in ("gpuvpa_container_gpu_memory_used_bytes", "gpuvpa_container_gpu_busy_ratio",
                       "gpuvpa_container_gpu_sm_active_ratio"):
            v = [s[4] for s in scrapes if s[1] == metric and s[2] == str(pid) and t0 + 1 < s[0] <= t1]
            row[metric.split("gpu_")[1]] = (sum(v) / len(v), len(v)) if v else (float("nan"), 0)
        methods = sorted({s[3] for s in scrapes if s[2] == str(pid) and t0 + 1 < s[0] <= t1})
        mem, busy, sm = row["memory_used_bytes"], row["busy_ratio"], row["sm_active_ratio"]
        f.write(f"{tag} pid {pid}: truth {gib} GiB, duty {duty}, kernel {kind} | agent "
                f"{mem[0] / 2**30:.2f} GiB, busy {busy[0]:.3f}, SM active {sm[0]:.3f} "
                f"({sm[1]} scrapes; methods {','.join(methods)})\n")
print(open(f"{OUT}/compare.txt").read())
