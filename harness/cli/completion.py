"""Shell completions for `ringsum`, made from its own parser (harness/cli/parser.py): the commands,
their verbs (baseline save|list, history add|show, wisdom show|forget|install), their options, an
option's choices, and file names where an option or argument takes a path.

    python -m harness.cli.completion bash|zsh > FILE     (`make completions` writes both)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from harness.cli.parser import make_parser

PATH_METAVARS = {"PATH", "FILE", "DIR", "CONFIG", "RUN_DIR", "RUN_A", "RUN_B", "BIN_DIR", "TUNE_DIR", "OUT",
                 "RUN_DIR|NAME"}


@dataclass
class Level:
    """A command (or a command's verb): what may follow it."""
    path: tuple[str, ...]
    help: str = ""
    options: dict[str, argparse.Action] = field(default_factory=dict)
    verbs: dict[str, "Level"] = field(default_factory=dict)
    takes_files: bool = False  # a positional argument is a path


def levels(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help_text: str = "") -> Level:
    level = Level(path, help_text)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                level.verbs[name] = levels(sub, (*path, name), helps.get(name) or sub.description or "")
        elif action.option_strings:
            for o in action.option_strings:
                level.options[o] = action
        elif _is_path(action):
            level.takes_files = True
    return level


def _is_path(action: argparse.Action) -> bool:
    metavar = action.metavar if isinstance(action.metavar, str) else (action.metavar or ("",))[0]
    return (metavar or action.dest.upper()) in PATH_METAVARS or action.dest in ("config", "run_dirs", "dirs")


def _value(action: argparse.Action) -> str:
    """What an option's value completes to: 'files', its choices, or '' (nothing to offer)."""
    if action.nargs == 0:
        return "-"
    if action.choices:
        return " ".join(map(str, action.choices))
    return "files" if _is_path(action) else ""


def all_levels(top: Level) -> list[Level]:
    out = [top]
    for v in top.verbs.values():
        out += all_levels(v)
    return out


def _bash_reply(value: str) -> str:
    if value == "files":
        return 'COMPREPLY=($(compgen -f -- "$cur"));'
    return f'COMPREPLY=($(compgen -W "{value}" -- "$cur"));' if value else ""


def bash(top: Level) -> str:
    cases = []
    for lv in all_levels(top):
        key = " ".join(lv.path)
        options = " ".join(sorted(lv.options))
        values = [f"{name}) {_bash_reply(v)} return ;;" for name, action in sorted(lv.options.items())
                  if (v := _value(action)) != "-"]
        cases += [f'        "{key}")',
                  *(["            case $prev in", *(f"                {v}" for v in values), "            esac"] if values else []),
                  f'            words="{options} {" ".join(lv.verbs)}"; files={int(lv.takes_files and not lv.verbs)} ;;']
    return "\n".join([
        "# bash completion for ringsum, made from its parser by harness/cli/completion.py",
        "_ringsum()",
        "{",
        '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path="" words files i',
        "    # the command and verbs typed so far, options and their values left out",
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in -*) ;; *) __ringsum_is_verb "$path" "${COMP_WORDS[i]}" && path="${path:+$path }${COMP_WORDS[i]}" ;; esac',
        "    done",
        '    case "$path" in',
        *cases,
        "    esac",
        '    if [[ $cur == -* || $files == 0 ]]; then',
        '        COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "    else",
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        "    fi",
        "}",
        "__ringsum_is_verb()",
        "{",
        '    case "$1:$2" in',
        *(f'        "{" ".join(lv.path[:-1])}:{lv.path[-1]}") return 0 ;;' for lv in all_levels(top)[1:]),
        "    esac",
        "    return 1",
        "}",
        "complete -o filenames -F _ringsum ringsum",
        "",
    ])


def zsh_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def _zsh_function(lv: Level) -> list[str]:
    name = "_ringsum" + "".join(f"_{p.replace('-', '_')}" for p in lv.path)
    specs = []
    for o, action in sorted(lv.options.items()):
        v = _value(action)
        value = "" if v == "-" else f":{zsh_escape(str(action.metavar or o.lstrip('-')))}:" + (
            "_files" if v == "files" else f"({v})" if v else " ")
        specs.append(f"    '{o}[{zsh_escape((action.help or '').replace('%%', '%'))}]{value}' \\")
    if lv.verbs:
        verbs = " ".join(f"'{v}:{zsh_escape(sub.help)}'" for v, sub in lv.verbs.items())
        tail = ["    '1: :->verb' '*:: :->rest'", "  case $state in",
                f"    verb) local -a verbs; verbs=({verbs}); _describe 'command' verbs ;;",
                f"    rest) local f={name}_$words[1]; f=${{f//-/_}}; (( $+functions[$f] )) && $f ;;", "  esac"]
    else:
        tail = ["    '*:file:_files'" if lv.takes_files else "    '*: :'"]
    return [f"{name}() {{", "  local state", "  _arguments -s -S \\", *specs, *tail, "}"]


def zsh(top: Level) -> str:
    lines = ["#compdef ringsum", "# zsh completion for ringsum, made from its parser by harness/cli/completion.py"]
    for lv in all_levels(top):
        lines += _zsh_function(lv)
    return "\n".join([*lines, '_ringsum "$@"', ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.cli.completion", description=__doc__.splitlines()[0])
    p.add_argument("shell", choices=("bash", "zsh"))
    a = p.parse_args(argv)
    top = levels(make_parser())
    sys.stdout.write(bash(top) if a.shell == "bash" else zsh(top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
