"""Launch stage: experiments and workloads, processes, listeners, start barrier, supervision."""
