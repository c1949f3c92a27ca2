"""Issue 35's outside cases: real chat templates (the published files, each naming its source in its first line,
under ``templates/``, plus TRL's copies of the Hub templates) x four conversations (one turn, multi-turn with a
system turn, a tool call with a top-level ``tools`` list and null content, reasoning in ``reasoning_content``).

The cases were split at random (``random.Random(35)``) into a dev half and a held-out half, written to
``outside_split.json`` and committed before the code they check was written; the checks were tuned on dev only.

The second round (``SECOND``: 12 more published templates, in ``templates/second_round/``, each naming its source in
its first line) is a fresh held-out check after the first held-out half was scored: its cases were split with
``random.Random(3502)`` into ``outside_split_2.json`` and committed before any code change of that round.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from families.catalog import HERE, trl_template_dir

# template name -> file: the published templates in templates/ and TRL's copies of Qwen 2.5, Qwen 3, Llama 3.2, cohere2
OUTSIDE = {
    **{
        n: HERE / f"{n}.jinja"
        for n in (
            "command_r7b_tool_use",
            "granite3_3_2b",
            "hermes3_tool_use",
            "llama3_2_3b_tools",
            "mistral_small3_2",
            "olmo2",
            "phi4_mini",
            "qwq_32b",
            "smollm2",
        )
    },
    "trl_qwen2_5": Path("trl") / "qwen2_5.jinja",
    "trl_qwen3": Path("trl") / "qwen3.jinja",
    "trl_llama3_2": Path("trl") / "llama3_2.jinja",
    "trl_cohere2": Path("trl") / "cohere2.jinja",
}
# the second round: templates no test had used, from llama.cpp's copies of the Hub files (ye-NX/llama.cpp@1eeb523c)
SECOND = {
    n: HERE / "second_round" / f"{n}.jinja"
    for n in (
        "command_r_plus_tool_use",
        "deepseek_v3_1",
        "devstral_small_2507",
        "firefunction_v2",
        "functionary_v3_2",
        "hermes2_pro_tool_use",
        "kimi_k2",
        "llama3_3_70b",
        "mistral_nemo",
        "nemotron_nano_v2",
        "qwen3_0_6b",
        "seed_oss",
    )
}
KINDS = ("one-turn", "multi-turn", "tool call", "reasoning")
SPLIT_FILE = Path(__file__).parent / "outside_split.json"
SPLIT_FILE_2 = Path(__file__).parent / "outside_split_2.json"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city."}},
                "required": ["city"],
            },
        },
    }
]


def template_text(name: str) -> str:
    path = OUTSIDE[name] if name in OUTSIDE else SECOND[name]
    if path.parts[0] == "trl":
        return (trl_template_dir() / path.name).read_text()
    return path.read_text()


def conversation(kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(messages, tools) of one kind of conversation."""
    if kind == "one-turn":
        return [{"role": "user", "content": "What is 2+3?"}, {"role": "assistant", "content": "5"}], None
    if kind == "multi-turn":
        return [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is 2+3?"},
            {"role": "assistant", "content": "5"},
            {"role": "user", "content": "And 4+4?"},
            {"role": "assistant", "content": "8"},
        ], None
    if kind == "tool call":
        fn = {"name": "get_weather", "arguments": {"city": "Oslo"}}
        call = {"type": "function", "id": "call00001", "function": fn}
        return [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "sunny, 21 C"},
            {"role": "assistant", "content": "Sunny and 21 C in Oslo."},
        ], TOOLS
    if kind == "reasoning":
        return [
            {"role": "user", "content": "What is 6*7?"},
            {"role": "assistant", "reasoning_content": "Six sevens are forty-two.", "content": "42"},
            {"role": "user", "content": "And 6*8?"},
            {"role": "assistant", "reasoning_content": "One more six: forty-eight.", "content": "48"},
        ], None
    raise ValueError(kind)


def all_cases(names: Any = OUTSIDE) -> list[str]:
    return [f"{name}/{kind}" for name in names for kind in KINDS]


def make_split(seed: int = 35, names: Any = OUTSIDE) -> dict[str, list[str]]:
    cases = sorted(all_cases(names))
    random.Random(seed).shuffle(cases)
    half = len(cases) // 2
    return {"seed": seed, "dev": sorted(cases[:half]), "held_out": sorted(cases[half:])}  # type: ignore[dict-item]


def split(second: bool = False) -> dict[str, list[str]]:
    return json.loads((SPLIT_FILE_2 if second else SPLIT_FILE).read_text())


if __name__ == "__main__":  # writes the split files (the first round's is committed: do not rewrite it)
    import sys

    if sys.argv[1:] == ["second"]:
        SPLIT_FILE_2.write_text(json.dumps(make_split(3502, SECOND), indent=1) + "\n")
    else:
        SPLIT_FILE.write_text(json.dumps(make_split(), indent=1) + "\n")
