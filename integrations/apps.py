from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    name = "integrations"
    verbose_name = "MemoryOS agent integrations (MCP server, OpenAI-compatible memory proxy)"
