"""Server actors: the pure state machine and the task that carries out its effects."""

from wave_actors.actor.actor import ServerActor as ServerActor
