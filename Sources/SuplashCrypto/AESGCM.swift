import COpenSSL

/// AES-256 in Galois/Counter Mode (NIST SP 800-38D) through OpenSSL's EVP cipher interface
/// (`EVP_aes_256_gcm`): a 32-byte key, a 96-bit nonce, a 128-bit tag, optional associated data.
///
/// This is the raw primitive; the caller owns nonce uniqueness. Values stored at rest go
/// through `SealingKeyring`, which draws every nonce from `RAND_bytes` and frames the result.
public enum AES256GCM {
    /// Key length, bytes.
    public static let keyLength = 32
    /// Nonce (IV) length, bytes (96 bits, the length SP 800-38D §8.2 recommends).
    public static let nonceLength = 12
    /// Authentication tag length, bytes (128 bits).
    public static let tagLength = 16

    /// Encrypts `plaintext` and authenticates it together with `associatedData`.
    ///
    /// Never use one (key, nonce) pair twice: GCM then leaks the XOR of the plaintexts and the
    /// authentication key.
    /// - Parameters:
    ///   - plaintext: any length (up to `Int32.max` bytes).
    ///   - key: exactly 32 bytes.
    ///   - nonce: exactly 12 bytes.
    ///   - associatedData: authenticated, not encrypted (may be empty).
    /// - Returns: the ciphertext (same length as `plaintext`) and the 16-byte tag.
    /// - Throws: `SealingError.invalidKeyOrNonce` for wrong lengths, `.cipherFailed` if OpenSSL fails.
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], nonce: [UInt8],
        associatedData: [UInt8] = []
    ) throws(SealingError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        guard key.count == keyLength, nonce.count == nonceLength, plaintext.count < Int(Int32.max),
            associatedData.count < Int(Int32.max)
        else { throw .invalidKeyOrNonce }
        defer { ERR_clear_error() }
        guard let context = EVP_CIPHER_CTX_new() else { throw .cipherFailed }
        defer { EVP_CIPHER_CTX_free(context) }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagLength)
        var ok =
            EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1
            && EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1
        var length: Int32 = 0
        if ok && !associatedData.isEmpty {
            ok = EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1
        }
        if ok && !plaintext.isEmpty {
            ok = ciphertext.withUnsafeMutableBufferPointer { out in
                EVP_EncryptUpdate(context, out.baseAddress, &length, plaintext, Int32(plaintext.count)) == 1
                    && Int(length) == plaintext.count
            }
        }
        if ok {
            // GCM produces no bytes at finalisation; the buffer is only written on misuse.
            var scratch = [UInt8](repeating: 0, count: 16)
            ok = EVP_EncryptFinal_ex(context, &scratch, &length) == 1 && length == 0
        }
        if ok {
            ok = tag.withUnsafeMutableBytes { out in
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), out.baseAddress) == 1
            }
        }
        guard ok else { throw .cipherFailed }
        return (ciphertext, tag)
    }

    /// Checks the tag over `associatedData` and `ciphertext` and decrypts.
    /// - Parameters:
    ///   - ciphertext: what `seal` returned.
    ///   - tag: exactly 16 bytes.
    ///   - key: exactly 32 bytes.
    ///   - nonce: exactly 12 bytes.
    ///   - associatedData: must equal what was sealed with.
    /// - Returns: the plaintext. Nothing is returned unless the tag verifies.
    /// - Throws: `SealingError.authenticationFailed` (wrong key, nonce, data or tag; any changed
    ///   byte), `.invalidKeyOrNonce` for wrong lengths, `.cipherFailed` if OpenSSL fails.
    public static func open(
        _ ciphertext: [UInt8], tag: [UInt8], key: [UInt8], nonce: [UInt8],
        associatedData: [UInt8] = []
    ) throws(SealingError) -> [UInt8] {
        guard key.count == keyLength, nonce.count == nonceLength, ciphertext.count < Int(Int32.max),
            associatedData.count < Int(Int32.max)
        else { throw .invalidKeyOrNonce }
        guard tag.count == tagLength else { throw .authenticationFailed }
        defer { ERR_clear_error() }
        guard let context = EVP_CIPHER_CTX_new() else { throw .cipherFailed }
        defer { EVP_CIPHER_CTX_free(context) }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        var ok =
            EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1
            && EVP_DecryptInit_ex(context, nil, nil, key, nonce) == 1
        var length: Int32 = 0
        if ok && !associatedData.isEmpty {
            ok = EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1
        }
        if ok && !ciphertext.isEmpty {
            ok = plaintext.withUnsafeMutableBufferPointer { out in
                EVP_DecryptUpdate(context, out.baseAddress, &length, ciphertext, Int32(ciphertext.count)) == 1
                    && Int(length) == ciphertext.count
            }
        }
        if ok {
            var expected = tag
            ok = expected.withUnsafeMutableBytes { t in
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), t.baseAddress) == 1
            }
        }
        guard ok else { throw .cipherFailed }
        var scratch = [UInt8](repeating: 0, count: 16)
        // EVP_DecryptFinal_ex compares the tag (in constant time) and fails on any mismatch.
        guard EVP_DecryptFinal_ex(context, &scratch, &length) == 1 else {
            wipe(&plaintext)
            throw .authenticationFailed
        }
        return plaintext
    }
}

/// HKDF with SHA-256 (RFC 5869) through OpenSSL's `EVP_KDF` (`"HKDF"`, extract-and-expand mode).
public enum HKDFSHA256 {
    /// `length` bytes of output keying material.
    /// - Parameters:
    ///   - inputKeyingMaterial: the secret (IKM), non-empty.
    ///   - salt: optional; empty means the RFC 5869 §2.2 default (32 zero bytes).
    ///   - info: context and application specific information (may be empty).
    ///   - length: 1…8160 bytes (255 × 32, RFC 5869 §2.3).
    /// - Throws: `SealingError.keyDerivationFailed` for an empty IKM, an out-of-range length or an
    ///   OpenSSL failure.
    public static func deriveKey(
        inputKeyingMaterial: [UInt8], salt: [UInt8] = [], info: [UInt8] = [],
        length: Int
    ) throws(SealingError) -> [UInt8] {
        guard !inputKeyingMaterial.isEmpty, length > 0, length <= 255 * 32 else { throw .keyDerivationFailed }
        defer { ERR_clear_error() }
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw .keyDerivationFailed }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw .keyDerivationFailed }
        defer { EVP_KDF_CTX_free(context) }
        guard let builder = OSSL_PARAM_BLD_new() else { throw .keyDerivationFailed }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps these pointers until `OSSL_PARAM_BLD_to_param`: they must outlive the
        // calls, so they are static strings, not bridged temporaries.
        guard let digestName = staticCString("digest"), let sha256 = staticCString("SHA256"), let keyName = staticCString("key"),
            let saltName = staticCString("salt"), let infoName = staticCString("info")
        else { throw .keyDerivationFailed }
        var output = [UInt8](repeating: 0, count: length)
        let derived: Bool = inputKeyingMaterial.withUnsafeBytes { ikm in
            salt.withUnsafeBytes { saltBytes in
                info.withUnsafeBytes { infoBytes in
                    // `OSSL_PARAM_BLD_to_param` copies the octet strings into the parameter block.
                    guard OSSL_PARAM_BLD_push_utf8_string(builder, digestName, sha256, 0) == 1,
                        OSSL_PARAM_BLD_push_octet_string(builder, keyName, ikm.baseAddress, ikm.count) == 1
                    else { return false }
                    if saltBytes.count > 0 {
                        guard OSSL_PARAM_BLD_push_octet_string(builder, saltName, saltBytes.baseAddress, saltBytes.count) == 1 else {
                            return false
                        }
                    }
                    if infoBytes.count > 0 {
                        guard OSSL_PARAM_BLD_push_octet_string(builder, infoName, infoBytes.baseAddress, infoBytes.count) == 1 else {
                            return false
                        }
                    }
                    // OpenSSL 3.0 has no `OSSL_PARAM_clear_free`: the block's copy of the key is freed, not wiped.
                    guard let params = OSSL_PARAM_BLD_to_param(builder) else { return false }
                    defer { OSSL_PARAM_free(params) }
                    return output.withUnsafeMutableBufferPointer { out in
                        EVP_KDF_derive(context, out.baseAddress, out.count, params) == 1
                    }
                }
            }
        }
        guard derived else { throw .keyDerivationFailed }
        return output
    }
}

/// Overwrites `bytes` with zeros through `OPENSSL_cleanse` (which the compiler may not elide).
func wipe(_ bytes: inout [UInt8]) {
    let count = bytes.count
    guard count > 0 else { return }
    bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, count) }
}
