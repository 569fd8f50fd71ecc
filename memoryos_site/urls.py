from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path

from dashboard.views.home import favicon
from integrations.mcp_endpoint import mcp_endpoint
from memoryos_site.login_throttle import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm

handler403 = "dashboard.views.home.permission_denied"
admin.site.login_form = ThrottledAdminAuthenticationForm  # behind the same lockout as /accounts/login/

urlpatterns = [
    path("accounts/login/", LoginView.as_view(authentication_form=ThrottledAuthenticationForm), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("favicon.ico", favicon, name="favicon"),
    path("api/v1/", include("api.urls")),
    path("v1/", include("integrations.urls")),  # the OpenAI-compatible memory proxy
    path("mcp/", mcp_endpoint, name="mcp"),  # MCP's streamable HTTP (integrations/mcp_endpoint.py)
    path("mcp", mcp_endpoint),  # as MCP clients are often configured: APPEND_SLASH's redirect would lose a POST
    path("chat/", include("chat.urls")),
    path("", include("dashboard.urls")),
]
