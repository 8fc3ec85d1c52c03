// Typed wrappers for libcurl's variadic calls, which Swift cannot import, and constants
// defined as cast expressions, which Swift does not see.
#ifndef CPAPERBOY_CURL_SHIM_H
#define CPAPERBOY_CURL_SHIM_H

#include <curl/curl.h>
#include <sys/prctl.h>

/// Names the calling thread as perf and top show it (Foundation's Thread.name does not here).
static inline void paperboy_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

static inline CURLcode paperboy_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode paperboy_easy_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode paperboy_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode paperboy_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode paperboy_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION (same signature).
static inline CURLcode paperboy_easy_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode paperboy_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode paperboy_easy_getinfo_offset(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode paperboy_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode paperboy_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/// The CURLcode of a finished transfer (a member of an anonymous union in CURLMsg).
static inline CURLcode paperboy_message_result(const CURLMsg *message) {
    return message->data.result;
}

static const long PAPERBOY_CURLAUTH_BASIC = (long)CURLAUTH_BASIC;
static const long PAPERBOY_CURLAUTH_DIGEST = (long)CURLAUTH_DIGEST;
static const long PAPERBOY_CURLAUTH_BEARER = (long)CURLAUTH_BEARER;
static const long PAPERBOY_CURLAUTH_ANY = (long)CURLAUTH_ANY;
static const size_t PAPERBOY_CURL_WRITEFUNC_PAUSE = CURL_WRITEFUNC_PAUSE;
static const int PAPERBOY_CURLPAUSE_CONT = CURLPAUSE_CONT;
static const int PAPERBOY_CURL_ERROR_SIZE = CURL_ERROR_SIZE;
static const long PAPERBOY_CURL_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const long PAPERBOY_CURLPIPE_MULTIPLEX = CURLPIPE_MULTIPLEX;

/// Whether this libcurl was built with HTTP/2.
static inline int paperboy_curl_supports_http2(void) {
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return (info->features & CURL_VERSION_HTTP2) != 0;
}

/// libcurl's version, such as "7.88.1".
static inline const char *paperboy_curl_version(void) {
    return curl_version_info(CURLVERSION_NOW)->version;
}

#endif
