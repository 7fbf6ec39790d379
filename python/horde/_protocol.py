"""What a protocol gives the DSL: step builders that ``exec()`` takes (:class:`Step`), and its
settings that ``setup(protocol=...)`` and ``.protocols(...)`` take (:class:`Protocol`).

The core (chains.py, simulation.py) knows these two classes and no protocol: a protocol's module
subclasses them, and importing it (one line in ``__init__.py``) registers it. The order of those
imports is the order protocols are named in error messages.
"""


class Step:
    """A protocol's step builder: ``to_step()`` is its plan step."""

    #: How ``exec()``'s error message names this kind of step ("a request (http(...))"); a
    #: subclass that sets it is listed there.
    hint = ""
    _kinds = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("hint"):
            Step._kinds.append(cls)

    def to_step(self):
        raise NotImplementedError

    @staticmethod
    def hints():
        """Every registered kind of step, in words."""
        return [kind.hint for kind in Step._kinds]


class Protocol:
    """A protocol's settings in a simulation: each kind puts its own part of the plan."""

    #: How error messages name this kind ("http.base_url(...)"); a subclass that sets it is a
    #: kind of protocol.
    hint = ""
    _kinds = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("hint"):
            Protocol._kinds.append(cls)

    @classmethod
    def check_given(cls, given):
        """Refuse what cannot be together: ``given`` are the simulation's protocols of this kind."""

    @classmethod
    def into_plan(cls, plan, given):
        """Write this kind's part of ``plan`` (a dict) from ``given``, which may be empty."""
        raise NotImplementedError

    @staticmethod
    def kinds():
        return list(Protocol._kinds)
