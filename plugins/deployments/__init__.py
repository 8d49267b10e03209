"""Deployments: pipelines, releases and deploys, fed by signed webhooks, promoted and rolled
back through PinCompute or a CD system. Registered through the public plugin API only."""

from plugins.deployments.plugin import DeploymentsPlugin

plugin = DeploymentsPlugin()

__all__ = ["DeploymentsPlugin", "plugin"]
