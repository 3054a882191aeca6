#!/usr/bin/env python3
"""runtime_stage.py: what the Dockerfile's runtime stage is made of, read from the Dockerfile
itself, so that the tests build and check exactly what the image ships (the Dockerfile is the
one list of runtime packages; nothing else repeats it).

    runtime_stage.py packages          the Debian packages its `apt-get install` names, one a line
    runtime_stage.py json              everything below, as JSON
    runtime_stage.py install-files ROOT --bin-dir DIR
                                       does the stage's COPYs into ROOT (a copy of the runtime
                                       root, tools/image/rootfs.sh): the build stage's binaries
                                       from DIR (the build's bin/), the build context's files
    runtime_stage.py check-libs BINARY...   every library BINARY links (ldd) comes from a package
                                       that the runtime root holds: the base image's (Essential and
                                       Priority required, as debian:12-slim) or the stage's
                                       packages, with their dependencies; exit 1 naming each one
                                       that does not

Read from the runtime stage (`FROM ... AS runtime`): its base image, the packages, the files it
copies (from the build context, or from the build stage's /out/), USER, EXPOSE, ENTRYPOINT and
CMD; from the build stage, the binaries it installs into /out/ (build-image/bin/NAME -> PATH).
Only the instructions this Dockerfile uses are understood; another one in the runtime stage is
an error naming it, so the tests never silently build something else than the image.

check-libs reads the host's dpkg database (the build host has every runtime library installed,
since the -dev packages depend on them): `--dockerfile` picks another Dockerfile and
`--without PKG` drops a package from its list (tests/image uses both to show the check fails).
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys

sys.dont_write_bytecode = True

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DOCKERFILE = os.path.join(ROOT, "Dockerfile")


class DockerfileError(Exception):
    pass


def instructions(text):
    """(line number, KEYWORD, rest) per instruction: continuation lines joined, comments dropped."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if not buf:
            start = n
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        keyword, _, rest = buf.partition(" ")
        out.append((start, keyword.upper(), rest.strip()))
        buf = ""
    if buf:
        raise DockerfileError("line %d: the instruction never ends (a trailing backslash)" % start)
    return out


def exec_form(rest, where):
    """ENTRYPOINT/CMD in exec form (a JSON list); the shell form is not what the image uses."""
    try:
        value = json.loads(rest)
    except ValueError:
        raise DockerfileError("%s: %r is not in exec form (a JSON list)" % (where, rest))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DockerfileError("%s: %r is not a list of strings" % (where, rest))
    return value


def apt_packages(command, where):
    """The package names of every `apt-get install` in a RUN's shell command."""
    packages = []
    for part in re.split(r"&&|;|\|\|", command):
        words = shlex.split(part)
        if len(words) >= 2 and words[0] == "apt-get" and "install" in words:
            for w in words[words.index("install") + 1:]:
                if not w.startswith("-"):
                    packages.append(w)
    return packages


def read_stages(path):
    with open(path) as f:
        text = f.read()
    stages, current = {}, None
    for n, keyword, rest in instructions(text):
        where = "%s:%d %s" % (os.path.basename(path), n, keyword)
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(stages))
            current = {"base": words[0], "instructions": []}
            stages[name] = current
        elif current is None:
            if keyword != "ARG":
                raise DockerfileError("%s before the first FROM" % where)
        else:
            current["instructions"].append((where, keyword, rest))
    return stages


def runtime_stage(path=DEFAULT_DOCKERFILE):
    stages = read_stages(path)
    if "runtime" not in stages:
        raise DockerfileError("%s has no stage named runtime (FROM ... AS runtime)" % path)
    rt = stages["runtime"]
    out = {"base": rt["base"], "packages": [], "copies": [], "user": None, "expose": [],
           "entrypoint": [], "cmd": [], "env": {}}
    for where, keyword, rest in rt["instructions"]:
        if keyword == "RUN":
            out["packages"] += apt_packages(rest, where)
        elif keyword == "ENV":
            k, _, v = rest.partition("=")
            out["env"][k.strip()] = v.strip()
        elif keyword == "COPY":
            words = rest.split()
            source_stage = None
            if words[0].startswith("--from="):
                source_stage = words.pop(0)[len("--from="):]
            if len(words) != 2:
                raise DockerfileError("%s: expected one source and one destination" % where)
            out["copies"].append({"from": source_stage, "src": words[0], "dest": words[1]})
        elif keyword == "USER":
            out["user"] = rest
        elif keyword == "EXPOSE":
            out["expose"] += [int(p.split("/")[0]) for p in rest.split()]
        elif keyword == "ENTRYPOINT":
            out["entrypoint"] = exec_form(rest, where)
        elif keyword == "CMD":
            out["cmd"] = exec_form(rest, where)
        else:
            raise DockerfileError("%s: not understood by tools/image/runtime_stage.py" % where)
    # The build stage's products: `install ... build-image/bin/NAME /out/PATH`.
    out["binaries"] = []
    for name, stage in stages.items():
        if name == "runtime":
            continue
        for where, keyword, rest in stage["instructions"]:
            if keyword != "RUN":
                continue
            for m in re.finditer(r"install\s+(?:-\S+\s+(?:\d+\s+)?)*\S*/bin/(\S+)\s+/out(/\S+)", rest):
                out["binaries"].append({"name": m.group(1), "path": m.group(2), "stage": name})
    if not out["packages"]:
        raise DockerfileError("%s: the runtime stage installs no package" % path)
    return out


# ---- check-libs ---------------------------------------------------------------------------------

def installed_packages():
    """Installed package -> {depends: [[alternatives]], provides: [...], base: bool}."""
    fmt = "${Package}\t${db:Status-Abbrev}\t${Essential}\t${Priority}\t${Provides}\t${Pre-Depends}\t${Depends}\n"
    text = subprocess.run(["dpkg-query", "-W", "-f=" + fmt], check=True, capture_output=True,
                          text=True).stdout
    out = {}
    for line in text.splitlines():
        name, status, essential, priority, provides, predeps, deps = line.split("\t")
        if not status.startswith("ii"):
            continue
        alternatives = []
        for clause in filter(None, (c.strip() for c in (predeps + "," + deps).split(","))):
            alternatives.append([re.split(r"[\s(:]", a.strip())[0] for a in clause.split("|")])
        out[name] = {"depends": alternatives,
                     "provides": [re.split(r"[\s(]", p.strip())[0] for p in provides.split(",") if p.strip()],
                     "base": essential == "yes" or priority == "required" or name == "apt"}
    return out


def closure(roots, db):
    """Every installed package that installing `roots` brings (first installed alternative)."""
    providers = {}
    for name, info in db.items():
        providers.setdefault(name, []).append(name)
        for p in info["provides"]:
            providers.setdefault(p, []).append(name)
    seen, todo, missing = set(), list(roots), []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in db:
            missing.append(name)
            continue
        for alternatives in db[name]["depends"]:
            for a in alternatives:
                if a in providers:
                    todo.append(providers[a][0])
                    break
    return seen, missing


def linked_libraries(binary):
    """soname -> the path the host's loader resolves it to (None: not found)."""
    text = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if m:
            out[m.group(1)] = None if m.group(2) == "not" else m.group(2)
        else:
            m = re.match(r"\s*(/\S+)\s+\(", line)  # the loader itself
            if m:
                out[os.path.basename(m.group(1))] = m.group(1)
    return out


def path_candidates(path):
    """`path` as given and resolved, each with /usr merged in or out (dpkg records one of them)."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        candidates.append("/usr" + p if not p.startswith("/usr/") else p[len("/usr"):])
    return candidates


def owning_packages(paths):
    """path -> the package that installed it (None: no package), for every path at once: one
    dpkg-query over every candidate, since each call reads the whole file database."""
    wanted = sorted({c for p in paths for c in path_candidates(p)})
    r = subprocess.run(["dpkg-query", "-S"] + wanted, capture_output=True, text=True)  # 1: some not found
    owner = {}
    for line in r.stdout.splitlines():
        if line.startswith("diversion ") or ": /" not in line:
            continue
        packages, found = line.split(": /", 1)
        owner["/" + found] = packages.split(",")[0].strip().split(":")[0]
    return {p: next((owner[c] for c in path_candidates(p) if c in owner), None) for p in paths}


def check_libs(stage, binaries, without=()):
    db = installed_packages()
    packages = [p for p in stage["packages"] if p not in without]
    roots = packages + [name for name, info in db.items() if info["base"]]
    have, missing = closure(roots, db)
    problems = ["runtime package %s is not installed on this host: cannot follow its dependencies "
                "(apt-get install it, or fix the name)" % m for m in missing if m in packages]
    linked = {binary: sorted(linked_libraries(binary).items()) for binary in binaries}
    owner = owning_packages([path for libs in linked.values() for _, path in libs if path is not None])
    for binary in binaries:
        for soname, path in linked[binary]:
            if path is None:
                problems.append("%s: %s is not found on this host either" % (binary, soname))
                continue
            pkg = owner[path]
            if pkg is None:
                problems.append("%s: %s (%s) comes from no Debian package" % (binary, soname, path))
            elif pkg not in have:
                problems.append("%s links %s (package %s), which no package of the runtime stage "
                                "brings: add %s to its apt-get install" % (os.path.basename(binary), soname,
                                                                          pkg, pkg))
    return problems


# ---- install-files ------------------------------------------------------------------------------

def install_files(stage, root, bin_dir):
    """The runtime stage's COPYs, into `root`: what it copies from the build stage's /out/ is the
    binaries that stage installs there (taken from bin_dir), the rest comes from the checkout."""
    def put(src, dest, mode):
        target = os.path.join(root, dest.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.lexists(target):
            os.unlink(target)  # never write through a hard link into the cached root
        with open(src, "rb") as fin, open(target, "wb") as fout:
            fout.write(fin.read())
        os.chmod(target, mode)

    for c in stage["copies"]:
        if c["from"] is not None:
            if c["src"].rstrip("/") != "/out" or c["dest"] != "/":
                raise DockerfileError("COPY --from=%s %s %s: only /out/ to / is understood" %
                                      (c["from"], c["src"], c["dest"]))
            for b in stage["binaries"]:
                src = os.path.join(bin_dir, b["name"])
                if not os.path.isfile(src):
                    raise DockerfileError("%s is not built (%s)" % (b["name"], src))
                put(src, b["path"], 0o755)
        else:
            src = os.path.join(ROOT, c["src"])
            if not os.path.isfile(src) or c["dest"].endswith("/"):
                raise DockerfileError("COPY %s %s: only a file to a file is understood" % (c["src"], c["dest"]))
            put(src, c["dest"], 0o644)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dockerfile", default=DEFAULT_DOCKERFILE)
    ap.add_argument("--without", action="append", default=[], help="check-libs: drop this package")
    ap.add_argument("--bin-dir", help="install-files: the build's bin/")
    ap.add_argument("command", choices=["packages", "json", "check-libs", "install-files"])
    ap.add_argument("binaries", nargs="*", help="check-libs: the binaries; install-files: the root")
    a = ap.parse_args()
    try:
        stage = runtime_stage(a.dockerfile)
    except (DockerfileError, OSError) as e:
        print("runtime_stage.py: %s" % e, file=sys.stderr)
        return 2
    if a.command == "packages":
        print("\n".join(stage["packages"]))
    elif a.command == "json":
        json.dump(stage, sys.stdout, indent=1)
        print()
    elif a.command == "install-files":
        if len(a.binaries) != 1 or not a.bin_dir:
            print("runtime_stage.py: install-files ROOT --bin-dir DIR", file=sys.stderr)
            return 2
        try:
            install_files(stage, a.binaries[0], a.bin_dir)
        except (DockerfileError, OSError) as e:
            print("runtime_stage.py: %s" % e, file=sys.stderr)
            return 1
    else:
        if not a.binaries:
            print("runtime_stage.py: check-libs needs the binaries to check", file=sys.stderr)
            return 2
        problems = check_libs(stage, a.binaries, a.without)
        for p in problems:
            print(p)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
