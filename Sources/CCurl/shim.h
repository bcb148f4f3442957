// libcurl for Swift: curl's option setters and getinfo are variadic C functions, which Swift
// cannot call, so each typed use gets a non-variadic inline wrapper here. Nothing else.
#ifndef SUPLASH_CCURL_SHIM_H
#define SUPLASH_CCURL_SHIM_H
#include <curl/curl.h>

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
/// `curl_global_init(CURL_GLOBAL_DEFAULT)` (the flags are a compound macro Swift cannot import).
static inline CURLcode suplash_curl_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}
#endif
