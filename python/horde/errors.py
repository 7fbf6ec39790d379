"""The exceptions horde raises: one hierarchy, rooted at :class:`HordeError`."""


class HordeError(Exception):
    """Base of every error horde raises."""


class SimulationError(HordeError):
    """A simulation file could not be turned into a plan (it raised, or defined no setup)."""


class ParameterError(SimulationError):
    """A parameter read with :func:`horde.param` is missing or has the wrong type."""


class DslError(HordeError, TypeError):
    """A DSL builder was used wrongly (a missing ``.during()``, a value of the wrong type)."""


class PlanError(HordeError):
    """The plan is invalid. ``problems`` lists (path, message) pairs."""

    def __init__(self, problems):
        self.problems = list(problems)
        lines = "\n".join(f"  {path}: {message}" for path, message in self.problems)
        super().__init__(f"invalid plan ({len(self.problems)} problems):\n{lines}")
