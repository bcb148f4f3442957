// libcurl for Swift: curl's option setters and getinfo are variadic C functions, which Swift
// cannot call, so each typed use gets a non-variadic inline wrapper here. Nothing else.
#ifndef SUPLASH_CCURL_SHIM_H
#define SUPLASH_CCURL_SHIM_H
#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <string.h>

typedef size_t (*suplash_curl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);
typedef int (*suplash_curl_prereq_callback)(void *userdata, char *primary_ip, char *local_ip,
                                            int primary_port, int local_port);

static inline CURLcode suplash_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode suplash_curl_easy_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode suplash_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode suplash_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode suplash_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode suplash_curl_easy_setopt_data_callback(CURL *handle, CURLoption option,
                                                              suplash_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode suplash_curl_easy_setopt_prereq_callback(CURL *handle, suplash_curl_prereq_callback value) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, value);
}
static inline CURLcode suplash_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode suplash_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode suplash_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}
/// The easy handle and result of a CURLMSG_DONE message (the union member `result`).
static inline CURLcode suplash_curl_msg_result(const CURLMsg *message) {
    return message->data.result;
}
/// Certificate verification that first insists on ALPN `h2`: OpenSSL runs it when the server's
/// certificate arrives, after ServerHello (TLS 1.2) or EncryptedExtensions (TLS 1.3) told which
/// protocol the server selected, and before any request byte is sent. Without `h2` it fails the
/// handshake with `X509_V_ERR_APPLICATION_VERIFICATION` (so the transfer ends with
/// `CURLE_PEER_FAILED_VERIFICATION` and `CURLINFO_SSL_VERIFYRESULT` names that code); otherwise
/// it is OpenSSL's usual `X509_verify_cert`.
static inline int suplash_verify_requiring_h2(X509_STORE_CTX *store, void *unused) {
    (void)unused;
    SSL *ssl = (SSL *)X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
    const unsigned char *alpn = NULL;
    unsigned int length = 0;
    if (ssl != NULL) SSL_get0_alpn_selected(ssl, &alpn, &length);
    if (length != 2 || memcmp(alpn, "h2", 2) != 0) {
        X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    return X509_verify_cert(store);
}
/// `CURLOPT_SSL_CTX_FUNCTION`: installs `suplash_verify_requiring_h2` on each new connection's
/// `SSL_CTX`.
static inline CURLcode suplash_ssl_ctx_requiring_h2(CURL *handle, void *ssl_ctx, void *userptr) {
    (void)handle;
    (void)userptr;
    SSL_CTX_set_cert_verify_callback((SSL_CTX *)ssl_ctx, suplash_verify_requiring_h2, NULL);
    return CURLE_OK;
}
/// Makes `handle` refuse, during the TLS handshake, a server that does not select ALPN `h2`.
static inline CURLcode suplash_curl_require_h2_alpn(CURL *handle) {
    return curl_easy_setopt(handle, CURLOPT_SSL_CTX_FUNCTION, suplash_ssl_ctx_requiring_h2);
}
/// `X509_V_ERR_APPLICATION_VERIFICATION`, the verify result of a refusal above.
static inline long suplash_alpn_refusal_code(void) {
    return X509_V_ERR_APPLICATION_VERIFICATION;
}
/// `curl_global_init(CURL_GLOBAL_DEFAULT)` (the flags are a compound macro Swift cannot import).
static inline CURLcode suplash_curl_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}
#endif
