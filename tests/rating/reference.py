#!/usr/bin/env python3
"""reference.py - an independent Weng-Lin Plackett-Luce update, written from the formula.

Reads cases on stdin, one per line: "n mu1 sigma1 place1 ... mun sigman placen";
writes one line per case: "mu1' sigma1' ... mun' sigman'". It groups the players
into places first (as the formula's A_q and C_q do), so it shares no code and no
shape with rating.c, which loops over players.
"""
import math
import sys

BETA, TAU, EPSILON = 25 / 6, 25 / 300, 1e-4


def update(players):
    var = [s * s + TAU * TAU for _, s, _ in players]
    c = math.sqrt(sum(v + BETA * BETA for v in var))
    places = sorted({r for _, _, r in players})
    members = {r: [i for i, p in enumerate(players) if p[2] == r] for r in places}
    exps = [math.exp(mu / c) for mu, _, _ in players]
    # Sum of exp over everyone placed at r or below, per place r.
    tail = {r: sum(exps[i] for i, p in enumerate(players) if p[2] >= r) for r in places}
    out = []
    for i, (mu, _, r_i) in enumerate(players):
        omega = delta = 0.0
        for r in places:
            if r > r_i:
                break
            a = len(members[r])
            p = exps[i] / tail[r]
            for q in members[r]:
                omega += ((1.0 if q == i else 0.0) - p) / a
                delta += p * (1 - p) / a
        sigma = math.sqrt(var[i])
        new_mu = mu + var[i] / c * omega
        new_sigma = sigma * math.sqrt(max(1 - sigma / c * var[i] / c ** 2 * delta, EPSILON))
        out.append((new_mu, new_sigma))
    return out


for line in sys.stdin:
    f = line.split()
    if not f:
        continue
    n = int(f[0])
    ps = [(float(f[1 + 3 * k]), float(f[2 + 3 * k]), int(f[3 + 3 * k])) for k in range(n)]
    print(" ".join("%.17g %.17g" % ms for ms in update(ps)))
