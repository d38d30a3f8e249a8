"""The warning that student kernels run without a sandbox, said once per run of `coursekit
autograde`, by the driver.

The judge says it (`autograder.kernel.sandbox.warn_once`) in the first notebook each process
grades, so every worker of the embedded cluster said it again, as a message and as a Python
warning: three or more copies of one paragraph on a 2-core machine. The driver now checks the
machine once and says it once (`say_once`); the embedded cluster's workers, on the same machine,
keep it to themselves (`keep_quiet`, run on each by `Cluster`). Workers of your own `dask
worker`, on other machines, still say it where it is true.
"""

import warnings


def say_once():
    """Say the warning (once per process) if this machine has no sandbox."""
    from autograder.kernel import sandbox

    if not sandbox.available():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # warn_once prints it, and warns it too
            sandbox.warn_once()


def keep_quiet():
    """In a worker of the embedded cluster: the driver, on this machine, says the warning."""
    from autograder.kernel import sandbox

    sandbox.warn_once(say=False)
