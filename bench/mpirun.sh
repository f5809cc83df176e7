# Sourced by the benchmark scripts: Open MPI's launcher as every comparison runs it. As root,
# with more ranks than the VM has cores, unbound (as our ranks are), and the ob1 PML over shared
# memory (vader), the path that competes with our shm transport.
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader)
