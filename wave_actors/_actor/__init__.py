"""Server actors, one per server of a session, or per shared connection of a project.

* ``messages``: the commands, generation-tagged events and effects;
* ``machine``: the pure state machine, every rule about a server's state;
* ``mailbox``: an actor's messages in arrival order;
* ``actor``: the task that feeds the machine and carries out its effects;
* ``transport_task``: one transport attempt (a generation).
"""
