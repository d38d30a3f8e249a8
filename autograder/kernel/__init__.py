"""The kernel wing: everything between the judge and a student's kernel.

Suite authors never need these modules; the judge (`autograder/judge.py`) and the seam
(`autograder/seam.py`) are their only users.

| module | job |
| --- | --- |
| `sandbox.py` | bubblewrap: what a kernel sees, and the user it runs as |
| `envelope.py` | one submission's control groups: memory (files in RAM too), processes, CPU |
| `warm.py` | the warm parent, which forks each kernel into a fresh sandbox |
| `zygote.py` | the warm parent's own program, shipped into its sandbox as text |
| `manager.py` | a kernel's job folder, and the jupyter_client manager that starts it |
| `client.py` | the jupyter_client client: quick to start, bounded messages |
| `channel.py` | how the judge's requests reach the agent, and how its replies are checked |
| `agent.py` | the data-only agent inside the kernel, shipped as text |
| `procfs.py` | what /proc says about a process, read from outside it |
"""
