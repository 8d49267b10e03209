"""PinCompute: PinApps and PinScalers across many Kubernetes clusters, as a plugin.

It imports only ``graph.plugin``, Atrium's public plugin API, like any third-party plugin.
"""

from plugins.pincompute.plugin import PinComputePlugin

plugin = PinComputePlugin()

__all__ = ["PinComputePlugin", "plugin"]
