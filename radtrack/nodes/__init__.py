"""Multi-node rows: one run of one script over N nodes (docs/sheets.md#multi-node-rows).

Every node runs a node agent; node 0's is the usual launcher (it creates the run) and
hosts the rendezvous (rendezvous.py) the others join: they measure their clock's offset to
it there, learn the run and torch's rendezvous port, run their part of the script with its
own listeners and spool (agent.py, keys node-scoped by sink.py) and report how it ended;
node 0 decides the run's one status from every node's end (outcome.py).
"""
