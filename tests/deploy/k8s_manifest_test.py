#!/usr/bin/python3
"""deploy/k8s/ccscope-{pairs,burnin}-mpijob.yaml against what the Kubeflow MPI Operator's MPIJob
v2beta1 CRD requires (its openAPIV3Schema: spec.mpiReplicaSpecs required; a replica's pod
template needs containers, each with a name; slotsPerWorker an integer; mpiImplementation one of
OpenMPI, Intel, MPICH; runPolicy.cleanPodPolicy None, Running or All), and against what ccscope
needs (mpirun launching ccscope with as many ranks as workers, /dev/shm as a memory volume; the
pairs options from its ConfigMap; the burn-in profile from its ConfigMap, mounted on every worker
and valid TOML). Not a cluster run: no cluster here."""

import os
import sys
import tomllib
import unittest

import yaml

K8S = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "k8s")


def load(name):
    with open(os.path.join(K8S, name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    return {d["kind"]: d for d in docs}


class MpiJobManifestTest(unittest.TestCase):
    MANIFEST = "ccscope-pairs-mpijob.yaml"
    COMMAND = "ccscope pairs"

    def setUp(self):
        self.docs = load(self.MANIFEST)
        self.job = self.docs["MPIJob"]
        self.spec = self.job["spec"]

    def launcher_line(self):
        launcher = self.spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
        return launcher, " ".join(launcher.get("command", []) + launcher.get("args", []))

    def test_mpijob_v2beta1_required_fields(self):
        self.assertEqual(self.job["apiVersion"], "kubeflow.org/v2beta1")
        self.assertTrue(self.job["metadata"]["name"])
        self.assertIsInstance(self.spec["slotsPerWorker"], int)
        self.assertIn(self.spec.get("mpiImplementation", "OpenMPI"), ("OpenMPI", "Intel", "MPICH"))
        self.assertIn(self.spec["runPolicy"]["cleanPodPolicy"], ("None", "Running", "All"))
        replicas = self.spec["mpiReplicaSpecs"]
        self.assertEqual(set(replicas), {"Launcher", "Worker"})
        self.assertEqual(replicas["Launcher"]["replicas"], 1)
        for role, r in replicas.items():
            self.assertIsInstance(r["replicas"], int, role)
            containers = r["template"]["spec"]["containers"]
            self.assertTrue(containers, role)
            for c in containers:
                self.assertTrue(c.get("name"), f"{role}: a container without a name")
                self.assertTrue(c.get("image"), f"{role}: a container without an image")

    def test_launcher_runs_ccscope_on_every_worker(self):
        replicas = self.spec["mpiReplicaSpecs"]
        workers = replicas["Worker"]["replicas"] * self.spec["slotsPerWorker"]
        _, line = self.launcher_line()
        self.assertIn(self.COMMAND, line)
        self.assertIn(f"-np {workers} ", line, "mpirun -np must match the workers")

    def test_options_come_from_the_configmap(self):
        launcher, line = self.launcher_line()
        self.assertIn("$CCSCOPE_ARGS", line)
        refs = [e["configMapRef"]["name"] for e in launcher.get("envFrom", [])]
        self.assertIn(self.docs["ConfigMap"]["metadata"]["name"], refs)
        self.assertIn("CCSCOPE_ARGS", self.docs["ConfigMap"]["data"])

    def test_workers_get_a_memory_backed_dev_shm(self):
        pod = self.spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
        mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
        self.assertIn("/dev/shm", mounts)
        volume = {v["name"]: v for v in pod["volumes"]}[mounts["/dev/shm"]]
        self.assertEqual(volume["emptyDir"]["medium"], "Memory")


class BurninManifestTest(MpiJobManifestTest):
    MANIFEST = "ccscope-burnin-mpijob.yaml"
    COMMAND = "ccscope burnin --profile /etc/ccscope/profile.toml"

    def test_options_come_from_the_configmap(self):
        """The profile: valid TOML with a name, mounted where every rank reads it."""
        profile = tomllib.loads(self.docs["ConfigMap"]["data"]["profile.toml"])
        self.assertTrue(profile["name"])
        pod = self.spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
        mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        config = self.docs["ConfigMap"]["metadata"]["name"]
        names = [n for n, v in volumes.items() if v.get("configMap", {}).get("name") == config]
        self.assertEqual(len(names), 1, "the profile's ConfigMap is not a worker volume")
        self.assertEqual(mounts[names[0]], "/etc/ccscope")


if __name__ == "__main__":
    sys.exit(unittest.main())
