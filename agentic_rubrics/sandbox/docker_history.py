"""The repository's history and the environment inside a ``swerex-docker`` container: the scripts
that replace ``/testbed/.git`` by a one-commit history at the base commit and check that nothing else is
left, and the environment read once for every command (SWE-bench's images keep the clone's later commits:
tags, reflog, packed objects, the fix among them).
"""

from __future__ import annotations

_GIT = "g() { git -c safe.directory='*' -c gc.auto=0 -c maintenance.auto=false \"$@\"; }\n"

CLEAN_HISTORY = (
    'set -euo pipefail\ncd -- "$1"\nbase=$2\n'
    + _GIT
    + r"""
if [ ! -e .git ]; then echo "no-git"; exit 0; fi
head=$(g rev-parse --verify --quiet 'HEAD^{commit}') || { echo "$PWD/.git has no HEAD commit" >&2; exit 3; }
if [ -n "$base" ] && [ "$head" != "$base" ]; then
  echo "HEAD is $head, not the task's base commit $base" >&2; exit 4
fi
branch=$(g symbolic-ref --quiet HEAD || true)
new=$(mktemp -d)
trap 'rm -rf -- "$new"' EXIT
g init -q "$new"
g -C "$new" fetch -q --no-tags --depth 1 "file://$PWD" HEAD
[ "$(g -C "$new" rev-parse --verify 'FETCH_HEAD^{commit}')" = "$head" ] || { echo "fetched another commit" >&2; exit 5; }
if [ -n "$branch" ]; then g -C "$new" symbolic-ref HEAD "$branch"; g -C "$new" update-ref HEAD "$head"
else g -C "$new" update-ref --no-deref HEAD "$head"; fi
rm -rf -- "$new/.git/FETCH_HEAD" "$new/.git/logs" .git
mv -- "$new/.git" .git
g read-tree HEAD
g update-index -q --refresh >/dev/null || true
echo "history $head"
"""
)

CHECK_HISTORY = (
    'set -euo pipefail\ncd -- "$1"\nbase=$2\n'
    + _GIT
    + r"""
if [ ! -e .git ]; then echo "no-git"; exit 0; fi
head=$(g rev-parse --verify 'HEAD^{commit}')
commits=$(g rev-list --count HEAD)
all_commits=$(g rev-list --count --all --reflog HEAD)
other_refs=$(g for-each-ref --format='%(objectname)' | { grep -cvx "$head" || true; })
stray_objects=$(comm -23 <(g cat-file --batch-all-objects --batch-check='%(objectname)' | sort -u) \
  <(g rev-list --objects HEAD | cut -d' ' -f1 | sort -u) | wc -l)
echo "head=$head commits=$commits all_commits=$all_commits other_refs=$other_refs stray_objects=$stray_objects"
"""
)


def history_problems(report: str, base_commit: str) -> list[str]:
    """What the history check's line says is left (nothing: an empty list)."""
    if report.strip() == "no-git":
        return []
    fields = {}
    for item in report.split():
        name, _, value = item.partition("=")
        fields[name] = value
    expected = {"commits": "1", "all_commits": "1", "other_refs": "0", "stray_objects": "0"}
    if set(fields) != {"head", *expected}:
        return [f"unreadable history check: {report[:200]!r}"]
    problems = [f"{k}={fields[k]} (expected {v})" for k, v in expected.items() if fields[k] != v]
    if base_commit and fields["head"] != base_commit:
        problems.append(f"HEAD {fields['head']} is not the base commit {base_commit}")
    return problems


def parse_environment(output: str) -> dict[str, str]:
    """``env -0``'s output as a mapping."""
    pairs = (entry.partition("=") for entry in output.split("\0") if "=" in entry)
    return {name: value for name, _, value in pairs if name and "\n" not in name}
