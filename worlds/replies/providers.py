"""Corpus part 2: replies of mailbox providers (Gmail, Microsoft, Yahoo/AOL, Apple, Zoho,
GMX/Web.de, Mail.ru, Yandex, ISPs) and of filtering services in front of company mail.

Sources are named per row: the providers' own error references where they publish one (Gmail's
"SMTP errors and codes", Microsoft Learn's NDR pages, Yahoo's postmaster pages), bounce reports
and logs published on public paste sites, the smtp.codes / SMTP Field Manual collections, and
the observed replies listed in open-source verifiers (check-if-email-exists).
"""

from __future__ import annotations

from worlds.replies.types import CorpusReply
from worlds.replies.types import Meaning as M
from worlds.replies.types import Stage as S
from worlds.replies.types import entry as e

_GMAIL = "Gmail SMTP errors and codes (support.google.com/a/answer/3726730)"
_GMAIL_SEEN = "Gmail reply as published in bounce reports (gmail-smtp-in.l.google.com)"
_MS = "Microsoft Learn, Exchange Online NDRs; published bounces from *.protection.outlook.com"
_YAHOO = "Yahoo postmaster (help.yahoo.com/kb/postmaster); published Exim/sendmail logs"
_REACHER = "check-if-email-exists core/src/smtp/parser.rs (reacherhq), observed replies"
_FIELD = "smtp.codes / SMTP Field Manual provider listing"
_PASTE = "published bounce report or server log"

_TOKEN = "a1-v6si1234567wrp.401"  # Gmail's per-session trace token, a fixed sample

PROVIDER_REPLIES: tuple[CorpusReply, ...] = (
    # --- Gmail / Google Workspace --------------------------------------------------------
    e("gmail.greeting", f"220 mx.google.com ESMTP {_TOKEN} - gsmtp", S.GREETING, M.ACCEPTED,
      _GMAIL_SEEN),
    e("gmail.sender_ok", f"250 2.1.0 OK {_TOKEN} - gsmtp", S.MAIL, M.ACCEPTED, _GMAIL_SEEN),
    e("gmail.rcpt_ok", f"250 2.1.5 OK {_TOKEN} - gsmtp", S.RCPT, M.ACCEPTED, _GMAIL_SEEN),
    e("gmail.no_such_user",
      "550-5.1.1 The email account that you tried to reach does not exist. Please try\n"
      "550-5.1.1 double-checking the recipient's email address for typos or\n"
      "550-5.1.1 unnecessary spaces. For more information, go to\n"
      f"550 5.1.1  https://support.google.com/mail/?p=NoSuchUser {_TOKEN} - gsmtp",
      S.RCPT, M.NO_SUCH_USER, _GMAIL),
    e("gmail.no_such_user_2016",
      "550-5.1.1 The email account that you tried to reach does not exist. Please try\n"
      "550-5.1.1 double-checking the recipient's email address for typos or\n"
      "550-5.1.1 unnecessary spaces. Learn more at\n"
      f"550 5.1.1 https://support.google.com/mail/answer/6596 {_TOKEN} - gsmtp",
      S.RCPT, M.NO_SUCH_USER, _GMAIL_SEEN + " (2016 wording)"),
    e("gmail.disabled",
      "550-5.2.1 The email account that you tried to reach is disabled. Learn more at\n"
      f"550 5.2.1  https://support.google.com/mail/?p=DisabledUser {_TOKEN} - gsmtp",
      S.RCPT, M.DISABLED, _GMAIL),
    e("gmail.receiving_rate",
      "450-4.2.1 The user you are trying to contact is receiving mail at a rate that\n"
      "450-4.2.1 prevents additional messages from being delivered. Please resend your\n"
      "450-4.2.1 message at a later time. If the user is able to receive mail at that\n"
      "450-4.2.1 time, your message will be delivered. For more information, please\n"
      f"450-4.2.1 visit\n450 4.2.1  https://support.google.com/mail/?p=ReceivingRate {_TOKEN} -"
      " gsmtp",
      S.RCPT, M.RATE_LIMITED, _GMAIL + "; Plesk KB (in reply to RCPT TO)"),
    e("gmail.receiving_too_quickly",
      "450-4.2.1 The user you are trying to contact is receiving mail too quickly.\n"
      "450-4.2.1 Please resend your message at a later time. If the user is able to\n"
      "450-4.2.1 receive mail at that time, your message will be delivered.\n"
      f"450 4.2.1  https://support.google.com/mail/?p=ReceivingRatePerm {_TOKEN} - gsmtp",
      S.RCPT, M.RATE_LIMITED, _GMAIL),
    e("gmail.over_quota",
      "452-4.2.2 The email account that you tried to reach is over quota. Please direct\n"
      f"452 4.2.2 the recipient to https://support.google.com/mail/?p=OverQuotaTemp {_TOKEN} -"
      " gsmtp",
      S.RCPT, M.FULL, _GMAIL),
    e("gmail.over_quota_inactive",
      "552-5.2.2 The recipient's inbox is out of storage space and inactive. Please direct\n"
      f"552 5.2.2 the recipient to https://support.google.com/mail/?p=OverQuotaPerm {_TOKEN} -"
      " gsmtp",
      S.RCPT, M.DISABLED, _GMAIL + " (out of storage and inactive: abandoned)"),
    e("gmail.try_again_closing",
      f"421 4.7.0 Try again later, closing connection. (RCPT) {_TOKEN} - gsmtp",
      S.RCPT, M.RATE_LIMITED, _GMAIL),
    e("gmail.unsolicited_rate",
      "421-4.7.0 [{client}] Our system has detected an unusual rate of\n"
      "421-4.7.0 unsolicited mail originating from your IP address. To protect our\n"
      "421-4.7.0 users from spam, mail sent from your IP address has been temporarily\n"
      "421 4.7.0 rate limited. https://support.google.com/mail/?p=UnsolicitedRateLimitError"
      f" {_TOKEN} - gsmtp",
      S.RCPT, M.HOST_BLOCKED, _GMAIL),
    e("gmail.not_authorized_ip",
      "550-5.7.1 [{client}] The IP you're using to send mail is not authorized to\n"
      "550-5.7.1 send email directly to our servers. Please use the SMTP relay at your\n"
      "550-5.7.1 service provider instead. For more information, go to\n"
      f"550 5.7.1  https://support.google.com/mail/?p=NotAuthorizedError {_TOKEN} - gsmtp",
      S.RCPT, M.HOST_BLOCKED, _GMAIL),
    e("gmail.temporary_problem",
      f"421 4.3.0 Temporary System Problem.  Try again later (10). {_TOKEN} - gsmtp",
      S.RCPT, M.TRANSIENT, _GMAIL),
    e("gmail.temporarily_rejected",
      f"451 4.3.0 Mail server temporarily rejected message. {_TOKEN} - gsmtp",
      S.RCPT, M.TRANSIENT, _GMAIL),
    e("gmail.too_many_recipients",
      "452-4.5.3 Your message has too many recipients. For more information regarding\n"
      "452 4.5.3 Google's sending limits, go to"
      f" https://support.google.com/mail/?p=TooManyRecipientsError {_TOKEN} - gsmtp",
      S.RCPT, M.TOO_MANY_RECIPIENTS, _GMAIL),
    e("gmail.not_whitelisted", "421 4.7.0 IP not in whitelist for RCPT domain, closing connection.",
      S.RCPT, M.HOST_BLOCKED, _GMAIL + " (Workspace inbound gateway setting)"),
    # --- Microsoft: Outlook.com and Exchange Online Protection -----------------------------
    e("outlook.greeting",
      "220 {host} Microsoft ESMTP MAIL Service ready at Mon, 1 Jan 2024 12:00:00 +0000 "
      "08DC0A1B2C3D4E5F", S.GREETING, M.ACCEPTED, _MS),
    e("outlook.sender_ok", "250 2.1.0 Sender OK", S.MAIL, M.ACCEPTED, _MS),
    e("outlook.rcpt_ok", "250 2.1.5 Recipient OK", S.RCPT, M.ACCEPTED, _MS),
    e("outlook.mailbox_unavailable",
      "550 5.5.0 Requested action not taken: mailbox unavailable. "
      "[DB5EUR01FT039.eop-EUR01.prod.protection.outlook.com]",
      S.RCPT, M.NO_SUCH_USER, _MS + " (hotmail.fr bounces via eur.olc.protection.outlook.com)"),
    e("outlook.mailbox_unavailable_bare",
      "550 5.5.0 Requested action not taken: mailbox unavailable.",
      S.RCPT, M.NO_SUCH_USER, _MS + " (Outlook.com consumer domains)"),
    e("eop.dbeb_access_denied",
      "550 5.4.1 Recipient address rejected: Access denied. AS(201806281) "
      "[BN8NAM12FT004.eop-nam12.prod.protection.outlook.com]",
      S.RCPT, M.NO_SUCH_USER, _MS + " (NDR 5.4.1: Directory-Based Edge Blocking, no such "
      "recipient in the tenant)"),
    e("eop.dbeb_access_denied_old",
      "550 5.4.1 [{rcpt}]: Recipient address rejected: Access denied "
      "[CY1GCC01FT007.eop-gcc01.prod.protection.outlook.com]",
      S.RCPT, M.NO_SUCH_USER, _MS + " (dhs.ga.gov bounce, 2018)"),
    e("eop.banned_ip",
      "550 5.7.606 Access denied, banned sending IP [{client}]. To request removal from this\n"
      "550 5.7.606 list please visit https://sender.office.com/ and follow the directions.\n"
      "550 5.7.606 For more information please go to"
      " http://go.microsoft.com/fwlink/?LinkID=526655 AS(1430)",
      S.RCPT, M.HOST_BLOCKED, _MS + " (NDR 5.7.606-649)"),
    e("eop.ip_not_accepted",
      "550 5.7.708 Service unavailable. Access denied, traffic not accepted from this IP.",
      S.RCPT, M.HOST_BLOCKED, _MS + " (NDR 5.7.708)"),
    e("eop.server_busy",
      "451 4.7.500 Server busy. Please try again later from [{client}]. (S77719)",
      S.RCPT, M.RATE_LIMITED, _MS + " (NDR 4.7.500-699)"),
    e("eop.tenant_relay", "550 5.7.64 TenantAttribution; Relay Access Denied",
      S.RCPT, M.RELAY_DENIED, _MS + " (NDR 5.7.64)"),
    e("outlook.block_list_s3150",
      "550 5.7.1 Unfortunately, messages from [{client}] weren't sent. Please contact your\n"
      "550 5.7.1 Internet service provider since part of their network is on our block list\n"
      "550 5.7.1 (S3150). You can also refer your provider to"
      " http://mail.live.com/mail/troubleshooting.aspx#errors.",
      S.RCPT, M.HOST_BLOCKED, _MS + " (Outlook.com S3150)"),
    e("outlook.block_list_s3140",
      "550 5.7.1 Unfortunately, messages from [{client}] weren't sent. Please contact your "
      "Internet service provider since part of their network is on our block list (S3140).",
      S.RCPT, M.HOST_BLOCKED, _MS + " (Outlook.com S3140)"),
    e("outlook.spamhaus",
      "550 5.7.1 Service unavailable, Client host [{client}] blocked using Spamhaus. To request "
      "removal from this list see https://www.spamhaus.org/query/ip/{client} (AS3130)",
      S.RCPT, M.HOST_BLOCKED, _MS + "; " + _REACHER),
    e("outlook.ip_rate_limited",
      "421 4.7.650 The mail server [{client}] has been temporarily rate limited due to IP "
      "reputation. For e-mail delivery information, see https://aka.ms/postmaster (S775)",
      S.RCPT, M.RATE_LIMITED, _MS + " (NDR 4.7.650)"),
    e("exo.mailbox_full",
      "554 5.2.2 mailbox full; STOREDRV.Deliver.Exception:QuotaExceededException."
      "MapiExceptionShutoffQuotaExceeded", S.DATA, M.FULL, _MS + " (NDR 5.2.2)"),
    # --- Yahoo / AOL --------------------------------------------------------------------
    e("yahoo.greeting", "220 {host} ESMTP ready", S.GREETING, M.ACCEPTED, _YAHOO),
    e("yahoo.sender_ok", "250 sender <{sender}> ok", S.MAIL, M.ACCEPTED, _YAHOO),
    e("yahoo.rcpt_ok", "250 recipient <{rcpt}> ok", S.RCPT, M.ACCEPTED, _YAHOO),
    e("yahoo.no_account",
      "554 delivery error: dd This user doesn't have a yahoo.com account ({rcpt}) [-5] - "
      "mta1024.mail.ac4.yahoo.com", S.RCPT, M.NO_SUCH_USER, _YAHOO + "; " + _REACHER),
    e("yahoo.no_account_short", "554 delivery error: This user doesn't have an account",
      S.RCPT, M.NO_SUCH_USER, _REACHER),
    e("yahoo.disabled",
      "554 delivery error: dd Sorry your message to {rcpt} cannot be delivered. This account "
      "has been disabled or discontinued [#102]. - mta4.mail.bf1.yahoo.com",
      S.RCPT, M.DISABLED, _REACHER),
    e("yahoo.tss04",
      "421 4.7.0 [TSS04] Messages from {client} temporarily deferred due to user complaints - "
      "4.16.55.1; see https://help.yahoo.com/kb/postmaster/SLN3434.html",
      S.MAIL, M.HOST_BLOCKED, _YAHOO + " (after MAIL FROM)"),
    e("yahoo.ts03",
      "421 4.7.1 [TS03] All messages from {client} will be permanently deferred; Retrying will "
      "NOT succeed. See https://help.yahoo.com/kb/postmaster/SLN3436.html",
      S.MAIL, M.HOST_BLOCKED, _YAHOO),
    e("yahoo.ts01",
      "421 4.7.0 [TS01] Messages from {client} temporarily deferred due to user complaints - "
      "4.16.55.1; see http://postmaster.yahoo.com/421-ts01.html",
      S.MAIL, M.HOST_BLOCKED, _YAHOO + " (2015)"),
    e("yahoo.too_quickly", "450 User is receiving mail too quickly", S.RCPT, M.RATE_LIMITED,
      _FIELD + " (Yahoo)"),
    e("aol.recipient_rejected", "550 5.1.1 <{rcpt}>: Recipient address rejected: aol.com",
      S.RCPT, M.NO_SUCH_USER, _PASTE + " (mailin-04.mx.aol.com)"),
    # --- Apple iCloud, Zoho, Proofpoint ---------------------------------------------------
    e("icloud.user_does_not_exist", "550 5.1.1 <{rcpt}>: user does not exist",
      S.RCPT, M.NO_SUCH_USER, _PASTE + " (mx01.mail.icloud.com)"),
    e("icloud.cs01",
      "554 5.7.1 [CS01] Message rejected due to local policy. Please visit "
      "https://support.apple.com/en-us/HT204137", S.DATA, M.HOST_BLOCKED,
      _PASTE + " (after end of data)"),
    e("proofpoint.blocked", "554 5.7.0 Blocked - see https://ipcheck.proofpoint.com/?ip={client}",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("proofpoint.reputation",
      "550 5.7.0  Mail from {client} refused by Proofpoint Reputation Services.  SENDER please "
      "see and take action: https://support.proofpoint.com/dnsbl-lookup.cgi?{client}",
      S.RCPT, M.HOST_BLOCKED, _REACHER + " (lmco.com)"),
    e("zoho.user_does_not_exist", "550 5.1.1 User does not exist - <{rcpt}>",
      S.RCPT, M.NO_SUCH_USER, "Zoho Mail reply; Zoho help articles"),
    # --- GMX / Web.de / IONOS (United Internet) -----------------------------------------
    e("gmx.greeting", "220 gmx.net (mxgmx017) Nemesis ESMTP Service ready", S.GREETING,
      M.ACCEPTED, _PASTE),
    e("webde.greeting", "220 web.de (mrweb005) Nemesis ESMTP Service ready", S.GREETING,
      M.ACCEPTED, _PASTE),
    e("gmx.policy_restrictions",
      "550-Requested action not taken: mailbox unavailable\n"
      "550-Reject due to policy restrictions.\n"
      "550 For explanation visit http://postmaster.gmx.com/en/error-messages?ip={client}&c=poli",
      S.GREETING, M.HOST_BLOCKED, _PASTE + " (mx00.emig.gmx.net 'refused to talk to me')"),
    e("gmx.block_listed",
      "554-gmx.net (mxgmx117) Nemesis ESMTP Service not available\n554-No SMTP service\n"
      "554-IP address is block listed.\n"
      "554 For explanation visit https://www.gmx.net/mail/senderguidelines?c=bl",
      S.GREETING, M.HOST_BLOCKED, _REACHER + " (gmx.net, web.de)"),
    e("ionos.not_local", "550 Requested action not taken: mailbox unavailable or not local",
      S.RCPT, M.NO_SUCH_USER, _PASTE + " (Spanish municipal domain)"),
    # --- Mail.ru, Yandex, other national providers -----------------------------------------
    e("mailru.user_not_found",
      "550 Message was not accepted -- invalid mailbox.  Local mailbox {rcpt} is unavailable: "
      "user not found", S.RCPT, M.NO_SUCH_USER, "Mail.ru reply; verifier reports"),
    e("mailru.user_terminated",
      "550 Message was not accepted -- invalid mailbox. Local mailbox {rcpt} is unavailable: "
      "user is terminated", S.DATA, M.DISABLED, _PASTE + " (mxs.mail.ru, after end of data)"),
    e("mailru.account_disabled",
      "550 Message was not accepted -- invalid mailbox. Local mailbox {rcpt} is unavailable: "
      "account is disabled", S.DATA, M.DISABLED, _PASTE + " (mxs.mail.ru)"),
    e("mailru.try_again", "421 Try again later ({client}). Please contact abuse@corp.mail.ru.",
      S.DATA, M.RATE_LIMITED, _PASTE + " (mxs.mail.ru, in reply to DATA)"),
    e("mailru.ok", "250 OK", S.RCPT, M.ACCEPTED, _PASTE + " (list.ru, bk.ru)"),
    e("yandex.no_such_user", "550 5.7.1 No such user!", S.RCPT, M.NO_SUCH_USER,
      _PASTE + " (mx.yandex.ru)"),
    e("yandex.spamsource",
      "554 5.7.1 Service unavailable; Client host [{client}] blocked using spamsource.yandex.ru; "
      "Blocked by spam statistics - see"
      " http://feedback.yandex.ru/?from=mail-rejects&subject={client}",
      S.GREETING, M.HOST_BLOCKED, _PASTE + " (mx.yandex.ru 'refused to talk to me')"),
    e("yandex.rate", "450 4.2.1 The recipient has exceeded message rate limit. Try again later.",
      S.RCPT, M.RATE_LIMITED, _FIELD + " (Yandex)"),
    e("bigmir.frozen", "550 Mailbox is frozen. See http://mail.bigmir.net/err/3/",
      S.RCPT, M.DISABLED, _PASTE + " (mx7.bigmir.net)"),
    e("qq.not_found",
      "550 Mailbox not found."
      " http://service.mail.qq.com/cgi-bin/help?subtype=1&&id=20022&&no=1000728",
      S.RCPT, M.NO_SUCH_USER, _PASTE),
    e("hanmail.inactive", "550 5.2.1 RACT {client}: Mailbox is inactive: <{rcpt}>",
      S.RCPT, M.DISABLED, _REACHER + " (hanmail.net)"),
    # --- ISPs ---------------------------------------------------------------------------
    e("comcast.not_our_customer", "550 5.1.1 <{rcpt}> Not our Customer", S.RCPT,
      M.NO_SUCH_USER, "Comcast inbound reply; Comcast postmaster error codes"),
    e("comcast.temporarily_unavailable", "450 4.2.0 <{rcpt}> - Recipient temporarily unavailable",
      S.RCPT, M.TRANSIENT, _FIELD + " (Comcast)"),
    e("comcast.dnsbl",
      "554 resimta-h1p-037598.sys.comcast.net resimta-h1p-037598.sys.comcast.net {client} "
      "found on one or more DNSBLs, see"
      " http://postmaster.comcast.net/smtp-error-codes.php#BL000001",
      S.GREETING, M.HOST_BLOCKED, _REACHER + " (comcast.net)"),
    e("juno.not_valid_user", "550 {rcpt} is not a valid user", S.RCPT, M.NO_SUCH_USER, _PASTE),
    e("synacor.does_not_exist", "550 5.1.1 [R2] Recipient {rcpt} does not exist here.",
      S.RCPT, M.NO_SUCH_USER, _PASTE + " (q.com via mx.quartz.synacor.com)"),
    e("bigpond.recipient_rejected", "550 5.1.1 <{rcpt}> recipient rejected", S.RCPT,
      M.NO_SUCH_USER, _PASTE + " (extmail.bigpond.com)"),
    e("virginmedia.mailbox_unknown", "550 5.1.1 MXIN501 mailbox {rcpt} unknown", S.RCPT,
      M.NO_SUCH_USER, _REACHER + " (virginmedia.com)"),
    e("facebook.no_longer_available",
      "550 5.1.1 RCP-P1 Domain facebook.com no longer available "
      "https://www.facebook.com/postmaster/response_codes?ip={client}#RCP-P1",
      S.RCPT, M.NO_SUCH_USER, _REACHER),
    e("centurylink.spf_fail",
      "550 SPF Hard Fail: Domain {sender_domain} does not designate {client} as permitted sender.",
      S.MAIL, M.SENDER_REFUSED, _PASTE + " (mx.centurylink.net, in reply to MAIL FROM)"),
    # --- filtering services in front of company mail ---------------------------------------
    e("messagelabs.invalid_recipient", "550 Invalid recipient <{rcpt}> (#5.1.1)", S.RCPT,
      M.NO_SUCH_USER, _PASTE + " (cluster4.us.messagelabs.com)"),
    e("barracuda.policy",
      "450 cuda_nsu 4.7.1 <{rcpt}>: Recipient address rejected: Policy Rejection- Abuse. Go away.",
      S.RCPT, M.HOST_BLOCKED, _FIELD + " (Barracuda)"),
    e("barracuda.reputation",
      "554 Service unavailable; Client host [{client}] blocked using Barracuda Reputation; "
      "http://www.barracudanetworks.com/reputation/?pr=1&ip={client}",
      S.RCPT, M.HOST_BLOCKED, "Barracuda Email Security Gateway reply"),
    e("rackspace.junkmail",
      "550 JunkMail rejected - {helo} [{client}]:46615 is in an RBL: "
      "http://www.barracudanetworks.com/reputation/?pr=1&ip={client}",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("zerospam.greylisted",
      "450 4.2.0 <{rcpt}>: Recipient address rejected: greylisted for 60 seconds by ZEROSPAM",
      S.RCPT, M.GREYLISTED, _FIELD + " (ZeroSpam)"),
    e("fsf.greylisted",
      "450 4.7.1 You dont seem to have a reverse dns entry. Come back later. You are greylisted "
      "for 20 minutes. See http://www.fsf.org/about/systems/greylisting",
      S.RCPT, M.GREYLISTED, _REACHER),
    e("improvmx.try_later", "450 4.2.1 Please try again later. (#id-5.9.4)", S.RCPT,
      M.GREYLISTED, _FIELD + " (ImprovMX)"),
    e("mimecast.poor_reputation",
      "550 csi.mimecast.org Poor Reputation Sender. - https://community.mimecast.com/docs/"
      "DOC-1369#550 [6ATVl4DjOvSA6XNsWGoUFw.us31]", S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("symantec.connection_rejected",
      "550 Connection rejected by policy [7.3] 38206, please visit https://support.symantec.com/"
      "en_US/article.TECH246726.html for more details about this error message.",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("amazon.sbrs", "554 smtp-fw-9107.amazon.com; SBRS score too low: http://www.senderbase.org/",
      S.GREETING, M.HOST_BLOCKED, _REACHER + " (amazon.com)"),
    e("trendmicro.reputation",
      "550 5.7.1 Mail from {client} has been blocked by Trend Micro Email Reputation Service.",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("sophos.blacklisted",
      "550 5.7.1 Service unavailable; Client host [{client}] is blacklisted. Visit "
      "https://www.sophos.com/en-us/threat-center/ip-lookup.aspx?ip={client} to request delisting",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("spamcop.blocked", "451 Blocked - see https://www.spamcop.net/bl.shtml?{client}",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("abusix.listed",
      "550 5.7.1 host {client} is listed at combined.mail.abusix.zone (127.0.0.12)",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("spamhaus.unable_to_add",
      "550 Unable to add <{rcpt}> because host {client} is listed on zen.spamhaus.org",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("generic.not_authorized_block_list",
      "550 5.7.1 Recipient not authorized, your IP has been found on a block list",
      S.RCPT, M.HOST_BLOCKED, _REACHER),
    e("generic.relaying_pop_first",
      "550 5.7.1 Relaying denied: You must check for new mail before sending mail. [{client}]",
      S.RCPT, M.RELAY_DENIED, _REACHER),
    e("generic.not_local_relay", "550 User not local or invalid address - Relay denied",
      S.RCPT, M.RELAY_DENIED, _REACHER),
    e("generic.relay_not_permitted", "550 relay not permitted!", S.RCPT, M.RELAY_DENIED,
      _REACHER),
)  # fmt: skip
