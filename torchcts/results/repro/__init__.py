"""Reproducing one case alone: the commands a report offers (commands.py), the sim's variables they set
(sim_env.py), and the standalone script (script.py renders it, body.py is its body).
"""
