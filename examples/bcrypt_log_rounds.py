"""Seed 002: how long does a bcrypt hash take at log rounds 6, 8, 10 and 12, on this machine?
The JMH benchmark of the seed (BCrypt.hashpw with BCrypt.gensalt(logRounds)), as a horde bench
file. Each trial is a fresh Python process; the calls per iteration are calibrated so that an
iteration lasts about a second (--iteration-time).

    pip install bcrypt
    horde bench examples/bcrypt_log_rounds.py --machine laptop --out laptop.json
    horde bench examples/bcrypt_log_rounds.py -p log_rounds=4,6 --fast    # a quick look

Run it on each machine (examples/bench_on_machines.sh), then put the machines side by side and
ask which log rounds each can afford in a 100 ms login:

    horde bench compare laptop.json m5.large.json c5.large.json --budget 100ms
"""

import bcrypt

from horde import bench


@bench.function(params={"log_rounds": [6, 8, 10, 12]}, unit="ms")
def hashpw(log_rounds):
    bcrypt.hashpw(b"password", bcrypt.gensalt(rounds=log_rounds))
