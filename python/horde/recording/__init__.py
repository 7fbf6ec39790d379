"""Recording a journey and turning it into a simulation: ``horde record`` and ``horde import``.

The pipeline, one module a stage::

    har.py         read a HAR file entry by entry (bounded memory), checking what it needs
    exchanges.py   the recorded exchanges: requests, responses and their bodies, decoded
    normalize.py   drop noise, collapse redirect chains, group pages and resources, pauses
    correlate/     find the values a request sends that an earlier response gave (framework
                   rules, then generic matching), values the client made, and typed inputs
    codegen.py     write the simulation in horde's DSL, with the files it needs beside it
    validate.py    replay it with one user, compare with the recording, correlate more
    report.py      what was correlated, generated, parameterized and dropped, and warnings
    record/        the recording proxy (HTTP and HTTPS, its own certificate authority)

The commands' flags are defined in Rust (crates/horde-cli/src/args.rs); ``cli.run`` gets them
as JSON.
"""
