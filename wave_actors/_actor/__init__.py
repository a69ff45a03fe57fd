"""Server actors: the pure state machine and the task that carries out its effects."""

from wave_actors._actor.actor import ServerActor as ServerActor
