#include <libxml/xmlversion.h>
/* Debian builds libxml2 with ICU; its ICU headers clash with Foundation's bundled ICU
   in one Swift module. The only ICU use is inside xmlCharEncodingHandler, which Swift
   code here never touches (pointers only), so the declarations are left out. */
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
