#!/usr/bin/env python3
"""Merges OCI spec fragments into the spec containerd generated for a container.

    merge-spec.py SPEC OUT [FRAGMENT...] -- ARG...

Objects merge key by key, anything else (lists included) is replaced by the fragment's
value, except "mounts": a fragment's mount replaces the spec's mount of the same
destination, or is added. The process's arguments become ARG... The engine tier uses it to change exactly the
settings a shape names (integration/engines/oci/*.json) and nothing else of ctr's spec.
"""
import json
import sys


def merge(base, fragment):
    for key, value in fragment.items():
        if key == "mounts" and isinstance(base.get(key), list):
            merge_mounts(base[key], value)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


def merge_mounts(mounts, replacements):
    for mount in replacements:
        same = [i for i, m in enumerate(mounts) if m.get("destination") == mount["destination"]]
        if same:
            mounts[same[0]] = mount
        else:
            mounts.append(mount)


def main(argv):
    split = argv.index("--")
    spec_path, out_path, fragments = argv[1], argv[2], argv[3:split]
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    for path in fragments:
        with open(path, encoding="utf-8") as f:
            merge(spec, json.load(f))
    spec["process"]["args"] = argv[split + 1:]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=2)


if __name__ == "__main__":
    main(sys.argv)
