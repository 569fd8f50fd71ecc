"""The invitation email: Django's password-reset link, worded as an invitation to set a first password.

Django's PasswordResetForm sends its links only to accounts with a usable password, and an invited operator has
none yet, so the link is made here, as that form makes it, and sent with the form's `send_mail`. It opens the
ordinary `password_reset_confirm` view.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.tokens import default_token_generator
from django.contrib.sites.shortcuts import get_current_site
from django.http import HttpRequest
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from memory.models import Membership


def invitation_send(request: HttpRequest, membership: Membership) -> None:
    """Email the invited operator a link to set their password (through EMAIL_BACKEND: the console log by default).

    Side effect: one email; nothing is written. The link works once, for PASSWORD_RESET_TIMEOUT.
    """
    account = membership.user
    site = get_current_site(request)
    context = {
        "user": account,
        "domain": site.domain,
        "protocol": "https" if request.is_secure() else "http",
        "uid": urlsafe_base64_encode(force_bytes(account.pk)),
        "token": default_token_generator.make_token(account),
        "tenant": membership.tenant.name,
        "role": membership.get_role_display(),
        "inviter": request.user.get_username(),
    }
    PasswordResetForm().send_mail(
        "registration/invitation_subject.txt",
        "registration/invitation_email.txt",
        context,
        settings.DEFAULT_FROM_EMAIL,
        account.email,
    )
