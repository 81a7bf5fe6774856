"""Writes bench/data/support-dev.jsonl: a support-bot dev set in WikiEval's shape, English and Japanese
(12 rows each), written by hand for this project (no text copied from any data set or real product's
documentation), so the local judge can be measured on the questions users really type into a product's
documentation chatbot: keyword queries with no question word or mark ("webhook retry policy",
「請求書 ダウンロード」), yes/no questions, how-to questions and wh-questions, about an invented SaaS
product (API tokens, billing, exports, permissions, audit logs, SSO, data retention, webhooks, rate
limits, backups, the mobile app).

Each row: question; context_v1 (2-4 sentences of documentation that answer it); context_v2 (the same
passage buried in unrelated sentences of its own language: lower context relevancy); answer (faithful
to context_v1, in a support bot's voice: short, numbered steps, or with the subject left implied);
ungrounded_answer (a changed number, name, setting or condition, or a claim the passage does not
make); poor_answer (a restatement of the question, a description of the documentation instead of an
answer, a polite refusal, an on-topic answer to a different ask, or an answer to only part of the ask
or vague where a number or person is asked). `kind` names the kind of poor answer (restate, meta,
refusal, off_target, incomplete), so results can be read per kind, never per row.

It was written by a helper that had not seen the local judge's code or scores, after this session's
first answer-relevancy changes (its first measurement was blind: answer relevancy 19/24, 17/24 with
the judge before them); the changes made after reading its misses are in bench/RESULTS.md.

    python bench/data/make_support_dev.py   # rewrites support-dev.jsonl next to this file
"""

from __future__ import annotations

from pathlib import Path

from dev_rows import write

NOISE_EN = [
    "The city library is closed on public holidays.",
    "Honeybees communicate the location of flowers by dancing.",
    "The museum's new wing opened to visitors in 2019.",
    "Mount Kilimanjaro is the highest mountain in Africa.",
    "The cafeteria serves soup on Tuesdays and Thursdays.",
    "Copper turns green over time as it reacts with the air.",
    "The marathon route passes along the river for eight kilometres.",
    "Most tomatoes grown today were bred for long shelf life.",
]

NOISE_JA = [
    "市立図書館は祝日が休館日です。",
    "ミツバチはダンスで花のある場所を仲間に伝えます。",
    "駅前の商店街では毎年夏に盆踊り大会が開かれます。",
    "琵琶湖は日本で最も大きな湖です。",
    "社内のコーヒーマシンは3階の休憩室にあります。",
    "銅は空気に触れ続けると緑色に変わります。",
    "このマラソンのコースは川沿いを8キロメートル走ります。",
    "梅雨の時期は湿度が高く、洗濯物が乾きにくくなります。",
]

# (question, context, faithful answer, ungrounded answer, poor answer, kind of poor answer)
ROWS_EN = [
    ("webhook retry policy",
     "A webhook delivery counts as failed if your endpoint does not return a 2xx status within 10 seconds. "
     "Failed deliveries are retried 5 times, after 1, 5, 30, 120 and 480 minutes. "
     "If the last retry also fails, the event is marked as undelivered and can be resent manually from "
     "Settings > Webhooks > Delivery log. "
     "Every payload is signed with your endpoint's secret in the X-Signature header.",
     "Failed deliveries (no 2xx response within 10 seconds) are retried 5 times, after 1, 5, 30, 120 and "
     "480 minutes. If the last retry fails too, the event is marked undelivered and you can resend it "
     "manually from Settings > Webhooks > Delivery log.",
     "Failed deliveries are retried 10 times over 24 hours. After that the endpoint is disabled "
     "automatically and you have to re-enable it from Settings > Webhooks.",
     "Webhooks send events from your workspace to your own endpoint. Every payload is signed with your "
     "endpoint's secret in the X-Signature header, so you can check that it really came from us, and "
     "you can see each delivery in Settings > Webhooks > Delivery log.",
     "off_target"),
    ("Can I restore a deleted project?",
     "Deleted projects are moved to the trash and can be restored from Settings > Projects > Trash for "
     "30 days. After 30 days they are permanently deleted together with their files and comments. "
     "Only workspace owners and admins can restore a project.",
     "Yes, within 30 days. An owner or admin can restore it from Settings > Projects > Trash. After that "
     "it's permanently deleted along with its files and comments.",
     "Yes, any project member can restore it from Settings > Projects > Trash for up to 90 days.",
     "I'm sorry, I can't help with restoring projects. Please contact our support team.",
     "refusal"),
    ("how do I rotate an API key",
     "To rotate an API key, open Settings > API tokens, select the key and click Rotate. "
     "The new secret is shown only once, so copy it right away; it cannot be displayed again. "
     "The old secret keeps working for 24 hours so you can update your integrations, and then it stops "
     "working.",
     "1. Go to Settings > API tokens.\n2. Select the key and click Rotate.\n3. Copy the new secret right "
     "away: it is shown only once.\nThe old secret keeps working for 24 hours, so update your "
     "integrations within that window.",
     "Go to Settings > API tokens, select the key and click Rotate. The old secret is revoked immediately, "
     "and you can view the new one again at any time on the key's details page.",
     "The API tokens documentation describes how to rotate your keys.",
     "meta"),
    ("Who can see the audit log?",
     "The audit log records sign-ins, permission changes, exports and deletions in your workspace. "
     "It is available on the Business and Enterprise plans. "
     "Only workspace owners and users with the Security admin role can view it, and entries are kept for "
     "365 days.",
     "Workspace owners and users with the Security admin role. Note that the audit log is only available "
     "on the Business and Enterprise plans.",
     "All admins and project managers can view the audit log, on every plan including Free.",
     "You are asking who can see the audit log.",
     "restate"),
    ("export csv limit",
     "You can export any table to CSV from the ••• menu > Export. "
     "A single CSV export can contain up to 100,000 rows; larger tables must be filtered or exported in "
     "parts. "
     "Exports over 10,000 rows are prepared in the background and emailed to you as a download link that "
     "is valid for 7 days.",
     "Up to 100,000 rows per CSV export. For bigger tables, filter them or export in parts. Exports over "
     "10,000 rows are emailed to you as a download link that's valid for 7 days.",
     "A single CSV export can contain up to 1,000,000 rows, and the download link in the email never "
     "expires.",
     "There is a limit on how many rows a CSV export can contain, and very large exports are sent to you "
     "by email.",
     "incomplete"),
    ("Is two-factor authentication required?",
     "Two-factor authentication (2FA) is optional for individual accounts. "
     "Workspace owners can make 2FA mandatory for all members under Settings > Security. "
     "Once it is enforced, members who have not set it up are asked to do so at their next sign-in.",
     "Not by default: it's optional. A workspace owner can make it mandatory for all members under "
     "Settings > Security, and members without 2FA are then asked to set it up at their next sign-in.",
     "Yes, 2FA is mandatory for every account, and members who have not set it up are locked out until "
     "an admin unlocks them.",
     "This page covers the two-factor authentication settings of your workspace.",
     "meta"),
    ("Is SSO included in the Pro plan and how do I set it up?",
     "SAML single sign-on is available on the Enterprise plan only. "
     "To set it up, go to Settings > Security > SSO, upload your identity provider's metadata XML and "
     "verify your email domain. "
     "After a test sign-in succeeds, you can turn on 'Require SSO' so that members can no longer sign in "
     "with a password.",
     "No, SSO is only on the Enterprise plan. Once you're on Enterprise:\n1. Open Settings > Security > "
     "SSO.\n2. Upload your identity provider's metadata XML.\n3. Verify your email domain.\n4. Run a test "
     "sign-in. When it works, you can turn on 'Require SSO' to stop members signing in with a password.",
     "Yes, SSO is included in Pro and all higher plans. Open Settings > Security > SSO and paste your "
     "identity provider's client ID and secret; SSO is then on for everyone, with no domain verification "
     "needed.",
     "Go to Settings > Security > SSO, upload your identity provider's metadata XML and verify your email "
     "domain.",
     "incomplete"),
    ("How many requests per minute can I make to the API?",
     "The REST API allows 600 requests per minute per API token. "
     "If you exceed the limit, the API answers with HTTP 429 and a Retry-After header that says how many "
     "seconds to wait. "
     "Bulk endpoints count each call as one request, however many records it contains.",
     "600 requests per minute per API token. If you go over, you'll get HTTP 429 with a Retry-After "
     "header telling you how many seconds to wait.",
     "1,000 requests per minute per workspace. Requests over the limit are queued and processed "
     "automatically once the minute is over.",
     "Bulk endpoints are a good way to cut down the number of calls you make, because each call counts as "
     "one request however many records it contains. If you get an HTTP 429 response, check the "
     "Retry-After header before you try again.",
     "off_target"),
    ("invoice download",
     "Invoices are listed under Settings > Billing > Invoices, where each one can be downloaded as a PDF. "
     "Only the workspace owner and members with the Billing manager role can open this page. "
     "A copy of every invoice is also emailed to the billing contact on the day it is issued.",
     "Go to Settings > Billing > Invoices and download the PDF. You need to be the workspace owner or have "
     "the Billing manager role. Each invoice is also emailed to your billing contact on the day it's "
     "issued.",
     "Go to Settings > Billing > Invoices. Any member of the workspace can download invoices there, as PDF "
     "or CSV.",
     "You are asking about downloading invoices.",
     "restate"),
    ("Does the mobile app work offline?",
     "The iOS and Android apps keep the projects you opened recently available offline. "
     "Changes you make offline are saved on the device and synced when you reconnect. "
     "Attachments larger than 20 MB are not downloaded for offline use.",
     "Partly. Projects you opened recently stay available offline, and changes you make are synced when "
     "you're back online. Attachments over 20 MB aren't available offline.",
     "Yes, every project in your workspace is downloaded for offline use, including all attachments, and "
     "offline changes are synced once an hour.",
     "Sorry, I don't have any information about the mobile app.",
     "refusal"),
    ("how often do you back up my data",
     "We back up all workspace data every 6 hours. "
     "Backups are encrypted and stored in a separate region for 35 days. "
     "They are for disaster recovery only: single items cannot be restored from a backup on request, so "
     "use the trash or version history instead.",
     "Every 6 hours. Backups are encrypted, kept in a separate region for 35 days and used only for "
     "disaster recovery; to get back a single item, use the trash or version history.",
     "Once a day at midnight UTC, and support can restore any single item from a backup for you within 35 "
     "days.",
     "Our documentation has a page about backups and disaster recovery.",
     "meta"),
    ("how long do you keep data after I delete my workspace",
     "When you cancel a paid subscription, your workspace switches to the Free plan at the end of the "
     "billing period. "
     "If you delete the workspace instead, its data is kept for 30 days and then permanently erased. "
     "During those 30 days, the owner can undo the deletion from the confirmation email.",
     "30 days, then it's permanently erased. Until then, the owner can undo the deletion from the "
     "confirmation email.",
     "90 days, and even after that support can recover it for you on request.",
     "Cancelling a paid subscription doesn't delete your workspace. It simply switches to the Free plan at "
     "the end of the current billing period, so you can keep using it.",
     "off_target"),
]

ROWS_JA = [
    ("請求書 ダウンロード",
     "請求書は「設定」>「お支払い」>「請求履歴」からPDFでダウンロードできます。過去24か月分まで表示されます。"
     "宛名を変更したい場合は、ダウンロードする前に「請求先情報」で会社名を編集してください。",
     "「設定」>「お支払い」>「請求履歴」からPDFでダウンロードできます（過去24か月分）。"
     "宛名を変えたい場合は、先に「請求先情報」で会社名を編集してください。",
     "「設定」>「お支払い」>「請求履歴」からPDFまたはExcel形式でダウンロードでき、過去のすべての請求書が表示されます。",
     "請求書のダウンロードについてのご質問ですね。",
     "restate"),
    ("二段階認証は必須ですか？",
     "二段階認証は一般メンバーには任意ですが、管理者権限を持つアカウントでは必須です。認証アプリまたはSMSで設定できます。"
     "設定しないまま14日が過ぎると、管理者権限が一時的に停止されます。",
     "一般メンバーは任意ですが、管理者権限のあるアカウントでは必須です。"
     "認証アプリかSMSで設定でき、14日以内に設定しないと管理者権限が一時停止されます。",
     "はい、すべてのアカウントで必須です。認証アプリでのみ設定でき、7日以内に設定しないとアカウントが削除されます。",
     "申し訳ございませんが、セキュリティ設定についてはお答えできません。",
     "refusal"),
    ("APIトークンの作り方",
     "APIトークンは「設定」>「開発者」>「APIトークン」で「新規作成」を押すと発行できます。"
     "権限は読み取り専用か読み書きのどちらかを選び、有効期限は最長1年まで設定できます。"
     "トークンは作成時に一度だけ表示されるため、必ず控えておいてください。",
     "1. 「設定」>「開発者」>「APIトークン」を開く\n2. 「新規作成」を押す\n"
     "3. 権限（読み取り専用／読み書き）と有効期限（最長1年）を選ぶ\n"
     "トークンは作成時に一度しか表示されないので、必ず控えておいてください。",
     "「設定」>「開発者」>「APIトークン」で「新規作成」を押すと発行できます。有効期限はなく、トークンはあとからいつでも再表示できます。",
     "このページでは、APIトークンの発行と管理について説明しています。",
     "meta"),
    ("監査ログは何日間保存されますか？",
     "監査ログはエンタープライズプランで利用でき、ログイン、権限の変更、データのエクスポートなどの操作が記録されます。"
     "保存期間は180日間です。それより長く保管したい場合は、CSVで書き出すか、外部のSIEMに転送してください。",
     "180日間です。それより長く残したい場合は、CSVで書き出すか外部のSIEMに転送してください。",
     "監査ログは1年間保存され、期間を過ぎたログは自動的にCSVにまとめられて管理者にメールで送られます。",
     "一定期間は保存されます。長く残したい場合はCSVで書き出すこともできます。",
     "incomplete"),
    ("退会後 データ 保持期間",
     "アカウントを退会すると、ユーザーのデータは30日間保持された後、完全に削除されます。"
     "30日以内であれば、同じメールアドレスでログインすると退会を取り消せます。"
     "法令で保存が義務づけられている請求記録は、7年間保管されます。",
     "退会後30日間は保持され、その後完全に削除されます。30日以内なら同じメールアドレスでログインすれば退会を取り消せます。"
     "なお、請求記録だけは法令により7年間保管されます。",
     "退会後90日間保持され、その後は請求記録も含めてすべてのデータが削除されます。",
     "恐れ入りますが、データの取り扱いについては分かりかねます。",
     "refusal"),
    ("ワークスペースのオーナーを別の人に変更できますか？",
     "ワークスペースのオーナーは、「設定」>「メンバー」で対象のメンバーを選び、「オーナー権限を譲渡」から変更できます。"
     "譲渡先は管理者ロールを持つメンバーに限られます。譲渡後、元のオーナーは管理者になります。"
     "メンバーの招待と削除も同じ画面から行えます。",
     "はい、できます。「設定」>「メンバー」で相手を選び、「オーナー権限を譲渡」を押してください。"
     "譲渡できるのは管理者ロールのメンバーだけで、譲渡後は元のオーナーが管理者になります。",
     "はい、できます。どのメンバーにも譲渡でき、譲渡後は元のオーナーはワークスペースから自動的に外れます。",
     "メンバーの管理は「設定」>「メンバー」の画面で行います。"
     "新しいメンバーを招待したり、不要になったメンバーを削除したりする操作は、すべてこの画面からできます。",
     "off_target"),
    ("Webhookの署名を検証するには？",
     "各Webhookリクエストには、X-Signatureヘッダーに署名が付きます。"
     "署名は、リクエスト本文をエンドポイントのシークレットでHMAC-SHA256にかけた値です。"
     "受信側で同じ計算をして一致しない場合は、そのリクエストを破棄してください。シークレットは「設定」>「Webhook」で確認できます。",
     "受信したリクエスト本文を、エンドポイントのシークレット（「設定」>「Webhook」で確認できます）でHMAC-SHA256にかけ、"
     "X-Signatureヘッダーの値と比べてください。一致しなければ、そのリクエストは破棄します。",
     "リクエスト本文をAPIトークンでSHA-1にかけた値がAuthorizationヘッダーに入っているので、それと比べてください。",
     "Webhookの署名を検証する方法についてのお問い合わせですね。",
     "restate"),
    ("API レート制限 何回まで",
     "APIの呼び出しは、トークンごとに1分あたり300回までです。"
     "上限を超えるとHTTP 429が返され、Retry-Afterヘッダーに待つべき秒数が入ります。"
     "エンタープライズプランでは、上限を1分あたり1,200回まで引き上げられます。",
     "トークンごとに1分あたり300回までです（エンタープライズプランでは1,200回まで引き上げ可能）。"
     "超えるとHTTP 429が返るので、Retry-Afterヘッダーの秒数だけ待ってから再試行してください。",
     "ワークスペース全体で1分あたり1,000回までです。超えたリクエストは自動的に順番待ちになり、あとで処理されます。",
     "上限を超えるとHTTP 429が返され、Retry-Afterヘッダーに待つべき秒数が入ります。"
     "このエラーが出た場合は、ヘッダーの値を確認してから再試行するようにしてください。",
     "off_target"),
    ("スマホアプリで複数のアカウントを切り替えられますか？",
     "モバイルアプリでは、最大3つのアカウントにログインしておき、プロフィール画面から切り替えられます。"
     "アカウントを追加するには、プロフィール画面の「アカウントを追加」を押してください。通知は、ログインしているすべてのアカウント分が届きます。",
     "はい、最大3つまでアカウントを追加して、プロフィール画面から切り替えられます。"
     "追加はプロフィール画面の「アカウントを追加」からどうぞ。",
     "はい、アカウントはいくつでも追加できます。ただし通知は、表示中のアカウントの分しか届きません。",
     "モバイルアプリのヘルプに、アカウントの管理方法が載っています。",
     "meta"),
    ("エクスポートしたCSVをExcelで開くと文字化けする",
     "エクスポートしたCSVファイルの文字コードはUTF-8です。"
     "Excelで開いたときに日本語が文字化けする場合は、エクスポート画面で「BOM付きUTF-8」を選んでから書き出してください。"
     "または、Excelの「データ」>「テキストまたはCSVから」で読み込み、文字コードにUTF-8を指定してください。",
     "エクスポート画面で「BOM付きUTF-8」を選んで書き出し直してください。"
     "または、Excelの「データ」>「テキストまたはCSVから」で読み込み、文字コードにUTF-8を指定すれば正しく表示されます。",
     "エクスポート画面で文字コードを「Shift_JIS」に変えて書き出せば、文字化けせずにExcelで開けます。",
     "申し訳ありませんが、Excelの操作はサポートの対象外のため、お答えできかねます。",
     "refusal"),
    ("バックアップはいつ取られていて、自分で復元できますか？",
     "すべてのプロジェクトは毎日午前3時（日本時間）に自動でバックアップされ、14日分が保存されます。"
     "管理者は「設定」>「バックアップ」から、保存されている任意の日付の状態にプロジェクトを復元できます。"
     "復元すると、その日付より後の変更は失われます。",
     "毎日午前3時（日本時間）に自動で取られ、14日分が保存されています。"
     "管理者であれば「設定」>「バックアップ」から任意の日付の状態に復元できますが、その日付より後の変更は失われます。",
     "毎日午前0時に取られ、30日分が保存されます。メンバーなら誰でも復元でき、復元してもそれ以降の変更は残ります。",
     "毎日午前3時（日本時間）に自動でバックアップされ、14日分が保存されます。",
     "incomplete"),
    ("ゲストを招待できるのは誰？",
     "ゲストは、特定のプロジェクトだけに参加できる外部のユーザーです。"
     "ゲストを招待できるのは、オーナーと管理者、そしてそのプロジェクトの編集権限を持つメンバーです。"
     "ゲストは課金の対象にならず、1つのワークスペースに50人まで招待できます。",
     "オーナー、管理者、それとそのプロジェクトの編集権限を持つメンバーが招待できます。"
     "ゲストは課金対象外で、1ワークスペースにつき50人までです。",
     "ゲストを招待できるのはオーナーだけで、ゲスト1人ごとに月額料金がかかります。",
     "ゲストを招待できるのは誰か、というご質問ですね。",
     "restate"),
]


def main() -> None:
    out = Path(__file__).with_name("support-dev.jsonl")
    n = write(out, [(ROWS_EN, NOISE_EN, " "), (ROWS_JA, NOISE_JA, "")], Path(__file__).name)
    print(f"{n} rows ({len(ROWS_EN)} en, {len(ROWS_JA)} ja) -> {out}")


if __name__ == "__main__":
    main()
