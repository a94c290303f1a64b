"""Child processes, the parts every kind shares (issue 42 item 3): how a dead process is described,
how a child dies with its parent, and the typed messages a parent and its child exchange.

Three kinds of child run device code: a forked case (workers/case_process.py), the ranks of a
distributed case (cases/ranks.py, cases/rank_worker.py) and the warm server's workers
(workers/zygote/). Each says why its process ended the same way (`exits.py`), none outlives a killed
run (`parent.py`), and each talks to its parent in `Message`s over a `Channel` (`channel.py`).
"""

from __future__ import annotations

from torchcts.process.channel import Channel, ChannelTimeout, Message, PeerGone, Protocol, ProtocolError, ready
from torchcts.process.exits import exit_fields, signal_name
from torchcts.process.parent import die_with_parent, watch_parent

__all__ = ["Channel", "ChannelTimeout", "Message", "PeerGone", "Protocol", "ProtocolError", "ready",
           "exit_fields", "signal_name", "die_with_parent", "watch_parent"]
