"""Shell completions for a hasher, made from its own --help: the options are written once, in options_help.c.

    python3 hashers/completion.py bash|zsh PROGRAM [--name NAME] > FILE

PROGRAM is the built hasher to ask; NAME is the command the completion is for (default: PROGRAM's
file name), so that uring_b3sum installed as b3sum completes as b3sum.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# "  -l, --length LEN             output bytes ..." and "      --path auto|memory|ring  uring_b3sum: ...";
# an option too long for its column has its help on the next line.
OPTION_LINE = re.compile(r"^  (?:-(?P<short>\w), |    )--(?P<long>[\w-]+)(?: (?P<arg>\S+))?(?:\s{2,}(?P<help>.*))?$")
# Words an option's value is one of, "auto|memory|ring"; a FILE value completes file names.
CHOICES = re.compile(r"^[a-z]+(?:\|[a-z]+)+$")


@dataclass(frozen=True)
class Option:
    long: str
    short: str | None
    arg: str | None
    help: str

    @property
    def names(self) -> list[str]:
        return [f"-{self.short}"] * bool(self.short) + [f"--{self.long}"]

    @property
    def choices(self) -> list[str]:
        return self.arg.split("|") if self.arg and CHOICES.match(self.arg) else []


def parse_help(text: str) -> list[Option]:
    options = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = OPTION_LINE.match(line)
        if m:
            said = m["help"] if m["help"] is not None else (lines[i + 1:] or [""])[0].strip()
            summary = re.sub(r"\s*\((?:default|default:)[^)]*\)?$", "", said).strip()
            options.append(Option(m["long"], m["short"], m["arg"], summary))
    return options


def bash(name: str, options: list[Option]) -> str:
    function = "_" + re.sub(r"\W", "_", name)
    words = " ".join(n for o in options for n in o.names)
    cases = []
    for o in options:
        if not o.arg:
            continue
        pattern = "|".join(o.names)
        if o.choices:
            cases.append(f'        {pattern}) COMPREPLY=($(compgen -W "{" ".join(o.choices)}" -- "$cur")); return ;;')
        elif o.arg == "FILE":
            cases.append(f'        {pattern}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
        else:
            cases.append(f"        {pattern}) return ;;")
    return "\n".join([
        f"# bash completion for {name}, made from its --help by hashers/completion.py",
        f"{function}()",
        "{",
        '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}',
        '    case $prev in',
        *cases,
        "    esac",
        '    if [[ $cur == -* ]]; then',
        f'        COMPREPLY=($(compgen -W "{words}" -- "$cur"))',
        "        return",
        "    fi",
        '    COMPREPLY=($(compgen -f -- "$cur"))',
        "}",
        f"complete -o filenames -F {function} {name}",
        "",
    ])


def zsh_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def zsh(name: str, options: list[Option]) -> str:
    specs = []
    for o in options:
        value = ""
        if o.arg:
            action = f"({' '.join(o.choices)})" if o.choices else "_files" if o.arg == "FILE" else " "
            value = f":{zsh_escape(o.arg)}:{action}"
        described = f"[{zsh_escape(o.help)}]{value}"
        if o.short:
            specs.append(f"  '(-{o.short} --{o.long})'{{-{o.short},--{o.long}}}'{described}'")
        else:
            specs.append(f"  '--{o.long}{described}'")
    return "\n".join([
        f"#compdef {name}",
        f"# zsh completion for {name}, made from its --help by hashers/completion.py",
        "_arguments -s -S \\",
        *(spec + " \\" for spec in specs),
        "  '*:file:_files'",
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shell", choices=("bash", "zsh"))
    parser.add_argument("program", type=Path)
    parser.add_argument("--name", help="the command to complete (default: PROGRAM's file name)")
    args = parser.parse_args(argv)
    done = subprocess.run([str(args.program.absolute()), "--help"], capture_output=True, text=True)
    options = parse_help(done.stdout)
    if done.returncode != 0 or not options:
        print(f"completion.py: {args.program}: --help gave no options (exit {done.returncode})", file=sys.stderr)
        return 1
    name = args.name or args.program.name
    sys.stdout.write(bash(name, options) if args.shell == "bash" else zsh(name, options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
