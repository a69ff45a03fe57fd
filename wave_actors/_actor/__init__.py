"""Server actors: the pure state machine (``machine``), one transport attempt (``transport_task``) and the
task that carries out the machine's effects (``actor``)."""
