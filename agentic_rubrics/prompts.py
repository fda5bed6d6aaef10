"""Prompt templates: ``prompts/<name>.yaml`` (Jinja2, StrictUndefined), rendered to text plus a hash.

Prompt prose lives only in those files. A missing template variable fails loudly. Untrusted text (issue,
rubric, patch, repository content) goes through :func:`fence`, which wraps it between markers derived
from its own hash, so the text cannot close its fence early.

Templates are found in the installed wheel (``agentic_rubrics/prompts/``, force-included at build time)
or, in a checkout, in the top-level ``prompts/`` folder.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import yaml

from agentic_rubrics.exceptions import ConfigError

_HERE = Path(__file__).resolve().parent
SEARCH_PATH = (_HERE / "prompts", _HERE.parent / "prompts")


def prompts_dir() -> Path:
    """The folder the templates are read from (wheel first, then checkout)."""
    for folder in SEARCH_PATH:
        if (folder / "judge.yaml").is_file():
            return folder
    raise ConfigError(f"prompt templates not found in {', '.join(map(str, SEARCH_PATH))}")


def fence(label: str, text: str) -> str:
    """Untrusted text between markers that embed a hash of the text itself.

    A text cannot contain its own end marker (that would need a sha256 fixed point), so it cannot
    close the fence early, whatever it says.
    """
    nonce = hashlib.sha256(text.encode()).hexdigest()[:16]
    tag = f"UNTRUSTED {label.upper()} {nonce}"
    return f"<<<BEGIN {tag}>>>\n{text}\n<<<END {tag}>>>"


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False
    )
    env.globals["fence"] = fence
    return env


@dataclass(frozen=True)
class Prompt:
    """One loaded template file (each part compiled once)."""

    name: str
    source: str
    templates: dict[str, str]

    @cached_property
    def _compiled(self) -> dict[str, Any]:
        env = _environment()
        return {part: env.from_string(text) for part, text in self.templates.items()}

    @property
    def hash(self) -> str:
        """sha256 of the template file: recorded beside every result it produced."""
        return "sha256:" + hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def ref(self) -> str:
        """``name@hash`` as recorded in records."""
        return f"{self.name}@{self.hash[:23]}"

    def variant_hash(self, **choices: Any) -> str:
        """The hash of the template as rendered with these choices (a form chosen by configuration):
        the file's own hash when there are none, else a hash over the file and the choices."""
        if not choices:
            return self.hash
        blob = self.source + "\n#variant " + json.dumps(choices, sort_keys=True)
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()

    def variant_ref(self, **choices: Any) -> str:
        """``name@hash`` of a variant, as recorded in records."""
        return f"{self.name}@{self.variant_hash(**choices)[:23]}"

    def render(self, part: str, **variables: Any) -> str:
        """Render one part (e.g. ``system`` or ``user``) with StrictUndefined."""
        import jinja2

        if part not in self.templates:
            raise ConfigError(f"prompt {self.name!r} has no part {part!r}")
        try:
            # leading spaces may be content (numbered file lines); only blank lines are trimmed
            return str(self._compiled[part].render(**variables)).lstrip("\n").rstrip() + "\n"
        except jinja2.UndefinedError as exc:
            raise ConfigError(f"prompt {self.name}.{part}: {exc.message}") from exc

    def messages(self, **variables: Any) -> list[dict[str, Any]]:
        """Chat messages: the ``system`` part (if any) then the ``user`` part."""
        out = []
        if "system" in self.templates:
            out.append({"role": "system", "content": self.render("system", **variables)})
        out.append({"role": "user", "content": self.render("user", **variables)})
        return out


@lru_cache(maxsize=32)
def load_prompt(name: str) -> Prompt:
    """Load ``<name>.yaml``: a mapping of part name -> Jinja2 template text."""
    path = prompts_dir() / f"{name}.yaml"
    try:
        source = path.read_text(encoding="utf-8")
        data = yaml.safe_load(source)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(f"{path}: expected a mapping of part names to template strings")
    return Prompt(name=name, source=source, templates=dict(data))


def template_names() -> list[str]:
    """Every template shipped."""
    return sorted(p.stem for p in prompts_dir().glob("*.yaml"))
