// MBL, the microblock language: grammar (ANTLR 4.13.2).
// The generated Python parser lives in parser/ and is committed; regenerate it with
// scripts/gen-parser (scripts/gen-parser --check fails when it is stale).
grammar MBL;

program : item* EOF ;

item
    : importDecl
    | constDecl
    | enumDecl
    | headerDecl
    | structDecl
    | memDecl
    | fnDecl
    | blockDecl
    | pipelineDecl
    ;

importDecl : 'import' STRING ';' ;
constDecl  : 'const' ident ':' type '=' expr ';' ;
enumDecl   : 'enum' ident ':' type '{' enumMember (',' enumMember)* ','? '}' ;
enumMember : ident '=' expr ;
headerDecl : 'header' ident '{' fieldDecl* '}' ;
structDecl : 'struct' ident '{' fieldDecl* '}' ;
fieldDecl  : ident ':' type ';' ;

// Memory-resident state. Placement defaults to sram.
memDecl
    : 'table' ident ':' tableKind=('lpm' | 'hash') '(' type ')' '->' type '[' expr ']' placement? ';'   # tableDecl
    | 'array' ident ':' type '[' expr ']' placement? ';'                                                 # arrayDecl
    | 'counter' ident '[' expr ']' placement? ';'                                                        # counterDecl
    | 'register' ident ':' type '[' expr ']' placement? ';'                                              # registerDecl
    ;
placement : 'in' space=('sram' | 'scratch' | 'local') ;

fnDecl    : 'fn' ident '(' params? ')' ('->' type)? body ;
blockDecl : 'block' ident body ;
params    : param (',' param)* ;
param     : ident ':' type ;

pipelineDecl : 'pipeline' ident '{' pipeItem* '}' ;
pipeItem
    : 'ports' INT ('..' INT)? ';'                         # pipePorts
    | 'stage' ident '=' ident ('on' 'me' '(' INT (',' INT)* ')')? ';'  # pipeStage
    | pipeEnd ('->' pipeEnd)+ ';'                          # pipeConnect
    ;
pipeEnd : ident ('.' ident)? ;

body : '{' stmt* '}' ;

stmt
    : 'let' ident (':' type)? '=' expr 'else' stmt          # letElseStmt
    | kw=('let' | 'var') ident (':' type)? '=' expr ';'     # letStmt
    | expr op=('=' | '+=' | '-=' | '&=' | '|=' | '^=') expr ';'   # assignStmt
    | 'if' expr body ('else' (ifTail=stmt | elseBody=body))?       # ifStmt
    | 'for' ident 'in' expr '..' expr body                  # forStmt
    | 'return' expr? ';'                                 # returnStmt
    | 'forward' '(' expr (',' expr)? ')' ';'             # forwardStmt
    | 'drop' '(' ident ')' ';'                              # dropStmt
    | 'exception' '(' expr ')' ';'                       # exceptionStmt
    | 'next' ('(' ident ')')? ';'                           # nextStmt
    | 'packet' '.' op=('push' | 'pull') '(' expr ')' 'else' stmt  # adjustStmt
    | body                                               # blockStmt
    | expr ';'                                           # exprStmt
    ;

expr
    : primary                                            # primaryExpr
    | expr '.' ident '(' args? ')'                          # methodExpr
    | expr '.' ident                                        # fieldExpr
    | expr '[' expr ':' expr ']'                         # sliceExpr
    | expr '[' expr ']'                                  # indexExpr
    | op=('-' | '~' | '!') expr                          # unaryExpr
    | expr 'as' type                                     # castExpr
    | expr op='*' expr                                   # binExpr
    | expr op=('+' | '-') expr                           # binExpr
    | expr op=('<<' | '>>') expr                         # binExpr
    | expr op='&' expr                                   # binExpr
    | expr op='^' expr                                   # binExpr
    | expr op='|' expr                                   # binExpr
    | expr op=('==' | '!=' | '<' | '<=' | '>' | '>=') expr  # binExpr
    | expr op='&&' expr                                  # binExpr
    | expr op='||' expr                                  # binExpr
    ;

primary
    : INT                                                # intLit
    | ('true' | 'false')                                 # boolLit
    | 'packet' '<' ident '>' '(' expr ')'                   # packetView
    | ident '(' args? ')'                                   # callExpr
    | ident                                                 # nameExpr
    | '(' expr ')'                                       # parenExpr
    ;

args : expr (',' expr)* ;

type
    : 'bit' '<' INT '>'                                  # bitType
    | 'bool'                                             # boolType
    | ident                                                 # namedType
    ;

// Names: identifiers plus the words that are keywords only in declarations, so that
// `let hash = ...` or `ports.src_port` read naturally.
ident
    : ID
    | 'ports' | 'stage' | 'on' | 'me' | 'sram' | 'scratch' | 'local' | 'lpm' | 'hash'
    | 'array' | 'table' | 'counter' | 'register' | 'push' | 'pull'
    ;

// A literal has at least one digit after its prefix; `0x`, `0x_` or `0b__` alone is a
// NODIGITS token, which no rule accepts, so the parser reports it where it stands.
INT     : '0x' '_'* [0-9a-fA-F] [0-9a-fA-F_]* | '0b' '_'* [01] [01_]* | [0-9] [0-9_]* ;
NODIGITS : ('0x' | '0b') '_'* ;
ID      : [a-zA-Z_] [a-zA-Z_0-9]* ;
STRING  : '"' (~["\\\r\n] | '\\' .)* '"' ;
LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS      : [ \t\r\n]+ -> skip ;
// Any other character becomes a token so the lexer never fails; the parser reports it.
ERRCHAR : . ;
