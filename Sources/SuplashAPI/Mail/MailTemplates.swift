import SuplashDomain

/// The plain-text messages that carry email codes, in the user's profile locale:
/// Turkish for `tr` and `tr-*` tags, English otherwise.
public enum MailTemplates {
    /// `(subject, text)` for a code of `purpose`; `code` is six ASCII digits, `validMinutes`
    /// its lifetime. The code is the only six-digit number in the text.
    public static func message(
        purpose: EmailCodePurpose, code: String, locale: String,
        validMinutes: Int
    ) -> (subject: String, text: String) {
        let turkish = locale.lowercased() == "tr" || locale.lowercased().hasPrefix("tr-") || locale.lowercased().hasPrefix("tr_")
        switch (purpose, turkish) {
        case (.verifyEmail, true):
            return (
                "Suplash doğrulama kodunuz",
                """
                Merhaba,

                Suplash e-posta adresinizi doğrulamak için kodunuz:

                    \(code)

                Kod \(validMinutes) dakika geçerlidir. Bu isteği siz yapmadıysanız bu e-postayı yok sayabilirsiniz.

                Suplash
                """
            )
        case (.verifyEmail, false):
            return (
                "Your Suplash verification code",
                """
                Hello,

                Your code to verify your Suplash email address:

                    \(code)

                The code is valid for \(validMinutes) minutes. If you did not ask for it, you can ignore this email.

                Suplash
                """
            )
        case (.resetPassword, true):
            return (
                "Suplash şifre sıfırlama kodunuz",
                """
                Merhaba,

                Suplash şifrenizi sıfırlamak için kodunuz:

                    \(code)

                Kod \(validMinutes) dakika geçerlidir. Şifre sıfırlandığında tüm cihazlardaki oturumlar kapatılır. \
                Bu isteği siz yapmadıysanız bu e-postayı yok sayabilirsiniz; şifreniz değişmez.

                Suplash
                """
            )
        case (.resetPassword, false):
            return (
                "Your Suplash password reset code",
                """
                Hello,

                Your code to reset your Suplash password:

                    \(code)

                The code is valid for \(validMinutes) minutes. Resetting the password signs you out on every device. \
                If you did not ask for it, you can ignore this email; your password stays the same.

                Suplash
                """
            )
        }
    }
}
