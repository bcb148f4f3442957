import COpenSSL

/// A public `EVP_PKEY` of `algorithm` (`"RSA"`, `"EC"`) built from OpenSSL parameters
/// (`EVP_PKEY_fromdata` with the public-key selection), shared by the RS256 and ES256 key
/// loaders.
/// - Returns: the key (the caller frees it with `EVP_PKEY_free`), or nil when OpenSSL refuses
///   the parameters (its error queue is cleared).
func publicKeyFromParameters(algorithm: String, _ params: UnsafeMutablePointer<OSSL_PARAM>) -> OpaquePointer? {
    guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else {
        ERR_clear_error()
        return nil
    }
    defer { EVP_PKEY_CTX_free(context) }
    var key: OpaquePointer?
    // EVP_PKEY_PUBLIC_KEY (a compound macro Swift cannot import) spelled out.
    let selection =
        OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS
        | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS
    guard EVP_PKEY_fromdata_init(context) == 1,
        EVP_PKEY_fromdata(context, &key, Int32(selection), params) == 1
    else {
        ERR_clear_error()
        return nil
    }
    return key
}

/// A NUL-terminated C string with static lifetime, for `OSSL_PARAM` names and values: the
/// parameter builder keeps the pointers until `OSSL_PARAM_BLD_to_param`, so a temporary Swift
/// `String` argument would dangle. Nil for a literal stored as a single scalar.
func staticCString(_ s: StaticString) -> UnsafePointer<CChar>? {
    guard s.hasPointerRepresentation else { return nil }
    return UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}
