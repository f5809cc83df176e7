#!/usr/bin/python3
"""deploy/k8s/ccscope-pairs-mpijob.yaml against what the Kubeflow MPI Operator's MPIJob v2beta1
CRD requires (its openAPIV3Schema: spec.mpiReplicaSpecs required; a replica's pod template needs
containers, each with a name; slotsPerWorker an integer; mpiImplementation one of OpenMPI,
Intel, MPICH; runPolicy.cleanPodPolicy None, Running or All), and against what ccscope needs
(mpirun launching `ccscope pairs` with as many ranks as workers, /dev/shm as a memory volume,
the options from the ConfigMap). Not a cluster run: no cluster here."""

import os
import sys
import unittest

import yaml

MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "k8s",
                        "ccscope-pairs-mpijob.yaml")


def load():
    with open(MANIFEST) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    return {d["kind"]: d for d in docs}


class MpiJobManifestTest(unittest.TestCase):
    def setUp(self):
        self.docs = load()
        self.job = self.docs["MPIJob"]
        self.spec = self.job["spec"]

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

    def test_launcher_runs_pairs_on_every_worker(self):
        replicas = self.spec["mpiReplicaSpecs"]
        workers = replicas["Worker"]["replicas"] * self.spec["slotsPerWorker"]
        launcher = replicas["Launcher"]["template"]["spec"]["containers"][0]
        line = " ".join(launcher.get("command", []) + launcher.get("args", []))
        self.assertIn("ccscope pairs", line)
        self.assertIn(f"-np {workers} ", line, "mpirun -np must match the workers")
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


if __name__ == "__main__":
    sys.exit(unittest.main())
