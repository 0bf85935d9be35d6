#!/usr/bin/env python3
"""Names the engine tier's shape a Kubernetes Job or Pod spec gives its containers.

    k8s-shape.py SPEC.yaml

Kubernetes does not run in CI; the tier runs each shape on containerd/runc instead. This
maps the spec's settings to the OCI spec changes of a shape, as containerd's CRI plugin
applies them: hostUsers: false -> oci/userns.json, procMount: Unmasked ->
oci/unmasked-proc.json, runAsUser other than 0 -> an unprivileged caller (oci/non-root.json),
seccompProfile
RuntimeDefault -> containerd's default profile (ctr run --seccomp). Prints the shape's
name for every container; exits 1 for a setting no shape has (privileged, a dropped
capability run needs, a Localhost profile).
"""
import sys

import yaml

ROOT_NEEDS = {"CHOWN", "SETUID", "SETGID", "FOWNER", "DAC_OVERRIDE", "ALL"}


def pod_spec(doc):
    if doc.get("kind") == "Pod":
        return doc["spec"]
    return doc["spec"]["template"]["spec"]


def shape(pod, container):
    pod_context = pod.get("securityContext", {})
    context = container.get("securityContext", {})
    if context.get("privileged"):
        raise ValueError(f"{container['name']}: privileged is no shape of the tier")
    dropped = {c.upper().removeprefix("CAP_") for c in context.get("capabilities", {}).get("drop", [])}
    run_as = context.get("runAsUser", pod_context.get("runAsUser", 0))
    if run_as == 0 and dropped & ROOT_NEEDS:
        raise ValueError(f"{container['name']}: drops {sorted(dropped & ROOT_NEEDS)}, which a root caller needs")
    seccomp = context.get("seccompProfile", pod_context.get("seccompProfile", {})).get("type", "RuntimeDefault")
    if seccomp == "RuntimeDefault":
        return "seccomp"
    if seccomp != "Unconfined":
        raise ValueError(f"{container['name']}: seccompProfile {seccomp} is no shape of the tier")
    if context.get("procMount", "Default") != "Unmasked":
        return "default"
    if pod.get("hostUsers", True) is not False:
        raise ValueError(f"{container['name']}: Kubernetes accepts procMount: Unmasked only with hostUsers: false")
    # A non-root user in a user-namespaced pod is an unprivileged caller, as in "non-root".
    return "non-root" if run_as != 0 else "userns"


def main(path):
    with open(path, encoding="utf-8") as f:
        pod = pod_spec(yaml.safe_load(f))
    try:
        for container in pod["containers"]:
            print(f"{container['name']}: {shape(pod, container)}")
    except ValueError as err:
        print(f"k8s-shape: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
