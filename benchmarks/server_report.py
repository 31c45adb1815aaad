"""The language-server benchmark's report: a table (each figure beside its target), or one
JSON object without the per-request arrays unless they are asked for.
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import print_head, print_memory_steps
from benchmarks.server_concurrent import WAYS
from benchmarks.server_corpus import CONTEXTS, ENTITIES, TAGS
from benchmarks.server_helper import print_helper
from benchmarks.server_probe import GC_SLOW_MS
from benchmarks.server_suites import (
    TARGET_COMPLETION_P99_MS,
    TARGET_DIAGNOSTICS_MS,
    TARGET_FIRST_COMPLETION_MS,
    TARGET_HOVER_P99_MS,
    TARGET_INITIALIZE_MS,
    TARGET_RSS_MB,
)


def _mark(met: bool | None) -> str:
    return "" if met is None else ("met" if met else "MISSED")


def strip_samples(data: Any) -> Any:
    """The report without per-request arrays (kept in --json only when asked)."""
    if isinstance(data, dict):
        return {
            k: strip_samples(v)
            for k, v in data.items()
            if k not in ("sent", "samples_ms", "slow_samples_ms", "prefixes")
        }
    if isinstance(data, list):
        return [strip_samples(v) for v in data]
    return data


def _row(label: str, row: dict[str, Any], target: str = "") -> str:
    items = row.get("items_mean")
    incomplete = row.get("incomplete_share")
    extra = ""
    if items is not None:
        extra = f"{items:6.1f}"
        extra += f" {incomplete:5.0%}" if incomplete is not None else "      "
    capped = "*" if row["runs"] < row.get("runs_planned", 0) else " "
    return (
        f"  {label[:40]:40} {row['runs']:5}{capped}{row['p50_ms']:7.2f} {row['p90_ms']:7.2f} "
        f"{row['p99_ms']:7.2f} {row['max_ms']:7.2f} {extra:>12}  {target}"
        f" {_mark(row.get('met'))}"
    )


def print_table(report: dict[str, Any]) -> None:
    params, build = report["parameters"], report["build"]
    print_head(
        "lsp-memory language-server benchmark (stdio, JSON-RPC client in the harness)",
        report,
        f"{params['claims']} claims, {CONTEXTS} contexts, {ENTITIES} entities, {TAGS} "
        f"tags; {params['notes']} notes; {build['documents']} documents indexed, "
        f"{build['vectors']} vectors; corpus {'reused' if report['corpus_reused'] else 'built'}",
    )
    s = report.get("startup")
    if s:
        _print_startup(s)
    m = report.get("main")
    if m:
        _print_main(m)
    rg = report.get("ripgrep")
    if rg:
        print(f"\n[[ candidates: obsidian.nvim's two rg commands ({rg['version']}) vs ours (ms)")
        print("  prefix  runs  rg p50  rg p99  content  files  notes  ours p50  rg/ours")
        for length, row in rg["by_length"].items():
            print(
                f"  {length:>6} {row['prefixes']:5} {row['rg']['p50_ms']:7.1f} "
                f"{row['rg']['p99_ms']:7.1f} {row['rg_content_median_ms']:8.1f} "
                f"{row['rg_files_median_ms']:6.1f} {row['notes_found_median']:6.0f} "
                f"{row['ours_median_ms']:9.2f} {row['ratio_rg_over_ours']:8.2f}"
            )
        example = rg["by_length"].get("2", next(iter(rg["by_length"].values())))["example"]
        print("  " + " ".join(example[0]) + "\n  " + " ".join(example[1]))
    e = report.get("while_embedding")
    if e:
        print(
            f"\nWhile the background thread embeds ({e['pending_before']} → "
            f"{e['pending_after']} notes pending, server CPU {e['server_cpu_share']:.0%} of a core)"
        )
        if "peak_vmrss_mib" in e:
            print(
                f"  peak VmRSS of server + embedding helper meanwhile: "
                f"{e['peak_vmrss_mib']:.0f} MiB (helper alone {e['helper_peak_vmrss_mib']:.0f})"
            )
        for row in e["cases"].values():
            idle = row["idle_same_inputs"]
            print(
                _row(row["label"], row)
                + f"  idle server, same inputs: p50 {idle['p50_ms']:.2f}, p99 {idle['p99_ms']:.2f}"
            )
    g = report.get("probe")
    if g:
        print(
            f"\nProbe server (collections and background syncs recorded): "
            f"{g['collections_after_ready']} collections after ready, "
            f"{g['collections_over_1ms']} ≥ {GC_SLOW_MS:g} ms; {g['frozen_objects']} objects frozen"
        )
        for generation, row in g["by_generation"].items():
            print(
                f"  generation {generation}: {row['count']:6} collections, median "
                f"{row['median_ms']:.3f} ms, p99 {row['p99_ms']:.2f} ms, max {row['max_ms']:.2f} ms"
            )
        for name, row in g["background_syncs"].items():
            print(
                f"  background {name:5}: {row['count']:4} runs, median {row['median_ms']:.0f} ms, "
                f"max {row['max_ms']:.0f} ms, {row['share_of_time']:.0%} of the time"
            )
        print("  case                     p50     p99  p99-GC  quiet p99 (runs)  slowest: GC sync")
        for key, row in g["cases"].items():
            quiet = row["quiet_p99_ms"]
            print(
                f"  {key:22} {row['p50_ms']:7.2f} {row['p99_ms']:7.2f} "
                f"{row['p99_without_gc_ms']:7.2f} "
                + (f"{quiet:10.2f} ({row['quiet_runs']:3})" if quiet is not None else " " * 16)
                + f"   {row['slowest_with_gc_pause']:3}/{row['slowest']:<3} "
                f"{row['slowest_with_sync']:3}/{row['slowest']}"
            )
    c = report.get("concurrent")
    if c:
        _print_concurrent(c)
    h = report.get("helper")
    if h:
        print_helper(h)
    print(f"\ntotal {report['total_s']:.0f} s; load average at end {report['load_average_at_end']}")


def _print_startup(s: dict[str, Any]) -> None:
    i = s["initialize"]
    print(f"\nStart-up ({s['spawns']} processes, existing index)      median     max  over")
    print(
        f"  spawn → initialize reply             {i['median_ms']:9.0f} {i['max_ms']:7.0f} "
        f"{i['over_target']:5}   ≤ {TARGET_INITIALIZE_MS:g} ms {_mark(i['met'])}"
    )
    print(f"    (the first process, no kept reply: {s['initialize_without_kept_reply_ms']:.0f} ms)")
    for trigger, row in s["first_completion"].items():
        print(
            f"  spawn → first completion {trigger:3} items {row['median_ms']:9.0f} "
            f"{row['max_ms']:7.0f} {row['over_target']:5}   ≤ {TARGET_FIRST_COMPLETION_MS:g} ms "
            f"{_mark(row['met'])}  ({row['after_index_ready']}/{row['runs']} after index ready; "
            f"{', '.join(row['item_kinds'])})"
        )


def _print_main(m: dict[str, Any]) -> None:
    print(
        f"\nMain server: index ready {m['index_ready_s']:.1f} s after spawn "
        f"({m['index_ready_message']}); idle after {m['idle']['waited_s']:.1f} s more"
    )
    print(
        "\nLatency (ms)                               runs     p50     p90     p99     max  "
        "items incompl  target"
    )
    for key, row in m["latency"].items():
        target = (
            TARGET_COMPLETION_P99_MS
            if key.startswith(("completion", "large comp"))
            else (TARGET_HOVER_P99_MS)
        )
        print(_row(row["label"], row, f"≤ {target:g}"))
    d = m["diagnostics"]
    print(
        f"\nDiagnostics ({d['document']['lines']} lines, {d['document']['references']} "
        f"references, {d['document']['diagnostics_mean']:.0f} diagnostics)"
    )
    print(_row("didOpen → publishDiagnostics", d["did_open"], f"≤ {TARGET_DIAGNOSTICS_MS:g}"))
    print(_row("didSave → publishDiagnostics", d["did_save"], f"≤ {TARGET_DIAGNOSTICS_MS:g}"))
    print(_row("didChange → publishDiagnostics (debounced)", d["did_change"]))
    after = d["did_change"]["check_after_debounce"]
    print(
        f"    … minus the {d['did_change']['debounce_s']:g} s debounce: p50 "
        f"{after['p50_ms']:.2f}, p99 {after['p99_ms']:.2f} ms"
    )
    mem = m["memory"]
    print(
        f"\nMemory after the runs: VmRSS {mem['vmrss_mb']:.0f} MB, VmHWM {mem['vmhwm_mb']:.0f} MB"
        f"   ≤ {TARGET_RSS_MB:g} MB {_mark(mem['met'])}"
    )
    print_memory_steps(mem["steps"], 20)
    both = mem.get("with_helper")
    if both is not None:
        helper = (both["helper"] or {}).get("vmrss_mib", 0.0)
        print(
            f"  with the embedding helper: VmRSS {both['total_vmrss_mib']:.0f} MiB "
            f"(helper {helper:.0f}), VmHWM sum {both['total_vmhwm_mib']:.0f} MiB"
        )


def _print_concurrent(c: dict[str, Any]) -> None:
    slow = c["slow"]
    print(
        f"\nConcurrent requests on one server ({c['prompts']} prompts with 5 references; the slow "
        "request sent, then at once the request)"
    )
    print(
        f"  slow requests: code lens p50 {slow['code_lens']['p50_ms']:.1f}, p99 "
        f"{slow['code_lens']['p99_ms']:.1f} ms; buildContext p50 "
        f"{slow['build_context']['p50_ms']:.1f}, p99 {slow['build_context']['p99_ms']:.1f} ms"
    )
    print(
        "  (ms)                                             runs     p50     p90     p99     max "
        "overtook  slow p50  slow p99  target"
    )
    for case in c["cases"].values():
        for way, name in WAYS.items():
            row = case[way]
            slow_row = row.get("slow")
            extra = (
                f"{row['overtook_share']:8.0%} {slow_row['p50_ms']:9.1f} {slow_row['p99_ms']:9.1f}"
                if slow_row
                else " " * 28
            )
            capped = "*" if row["runs"] < row.get("runs_planned", 0) else " "
            print(
                f"  {case['label'] + ' ' + name:48} {row['runs']:5}{capped}"
                f"{row['p50_ms']:7.2f} {row['p90_ms']:7.2f} {row['p99_ms']:7.2f} "
                f"{row['max_ms']:7.2f} {extra}  ≤ {case['target_p99_ms']:g} {_mark(row['met'])}"
            )
