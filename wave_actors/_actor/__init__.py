"""Server actors, one per configured server of a session or a project.

* ``messages``: the commands, generation-tagged events and effects;
* ``machine``: the pure state machine, every rule about a server's state;
* ``mailbox``: an actor's messages in arrival order;
* ``actor``: the task that feeds the machine and carries out its effects;
* ``transport_task``: one transport attempt (a generation).
"""
